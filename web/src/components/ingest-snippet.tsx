import { useQuery } from '@tanstack/react-query';
import { CopyButton } from './copy-button';
import { setupStatusQuery } from '../api/queries';

/** The ingest URL: announced by the API (`GET /v1/setup`), else the same host on port 8081. */
export function useIngestUrl(): string {
  const setup = useQuery({ ...setupStatusQuery, staleTime: Infinity });
  const announced = setup.data?.ingestUrl;
  return announced ?? `${window.location.protocol}//${window.location.hostname}:8081`;
}

/** A copy-ready curl command that sends one record to the bucket's batch ingest API. */
export function IngestSnippet({ bucketSid }: { bucketSid: string }) {
  const ingest = useIngestUrl();
  const snippet = `curl -X POST ${ingest}/v1/buckets/${bucketSid}/ingest \\
  -H "Authorization: Bearer $TAPLINE_TOKEN" -H 'content-type: application/json' \\
  -d '{"records":[{"request":{"method":"GET","path":"/hello"},"response":{"statusCode":200},"timings":{"duration":12}}]}'`;
  return (
    <div className="snippet">
      <p>
        With an API token holding <code>requests:write</code> in <code>$TAPLINE_TOKEN</code>:
      </p>
      <pre>
        <code data-testid="ingest-curl">{snippet}</code>
      </pre>
      <CopyButton text={snippet} label="Copy curl command" />
    </div>
  );
}

/**
 * The Node.js SDK (`@tapline/node`, docs/sdk.md) in an Express app, and the OpenTelemetry
 * exporter settings (docs/opentelemetry.md: OTLP/HTTP traces to the ingest listener, the bucket in
 * `X-Tapline-Bucket`), each ready to copy.
 */
export function AppSnippets({ bucketSid }: { bucketSid: string }) {
  const ingest = useIngestUrl();
  const node = `// npm install @tapline/node (from a Tapline clone: npm pack -w @tapline/node)
import { Tapline } from '@tapline/node';
import { setupStatusQuery } from '../api/queries';

const tapline = new Tapline({
  endpoint: '${ingest}',
  bucketSid: '${bucketSid}',
  token: process.env.TAPLINE_TOKEN,
});
app.use(tapline.express()); // or app.register(tapline.fastify), koaApp.use(tapline.koa())`;
  const otel = `export OTEL_EXPORTER_OTLP_TRACES_ENDPOINT=${ingest}/v1/traces
export OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf
export OTEL_EXPORTER_OTLP_TRACES_HEADERS="Authorization=Bearer%20$TAPLINE_TOKEN,X-Tapline-Bucket=${bucketSid}"`;
  return (
    <>
      <div className="snippet">
        <h3>Node.js SDK</h3>
        <p>Captures the app's incoming and outgoing calls and sends them in gzip batches:</p>
        <pre>
          <code data-testid="node-sdk-snippet">{node}</code>
        </pre>
        <CopyButton text={node} label="Copy Node.js SDK snippet" />
      </div>
      <div className="snippet">
        <h3>OpenTelemetry</h3>
        <p>An app already traced with OpenTelemetry needs no SDK: point its OTLP/HTTP trace exporter here.</p>
        <pre>
          <code data-testid="otel-snippet">{otel}</code>
        </pre>
        <CopyButton text={otel} label="Copy OpenTelemetry settings" />
      </div>
    </>
  );
}
