/** The only file that knows Kafka topic names (docs/architecture.md, convention 1). */
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
