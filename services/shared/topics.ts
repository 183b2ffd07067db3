/** The only file that knows Kafka topic names (STYLE.md rule 1). */
export const TOPICS = {
  requests: 'traffic.requests',
  requestsDlq: 'traffic.requests.dlq',
  actions: 'workflow.actions',
  actionsDlq: 'workflow.actions.dlq',
} as const;

export const CONSUMER_GROUPS = {
  processor: 'processor',
  actions: 'actions',
} as const;
