/**
 * A failed action. `retryable` false means another attempt cannot help (refused address, 4xx,
 * bad config, SMTP not configured): the action is not tried again.
 */
export class ActionError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly statusCode?: number,
  ) {
    super(message);
    this.name = 'ActionError';
  }
}

/** The reason a job's signal aborts with when the runner stops: the job is left for redelivery. */
export class RunnerStoppingError extends Error {
  constructor() {
    super('action runner stopping');
    this.name = 'RunnerStoppingError';
  }
}
