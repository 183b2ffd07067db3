import { useQuery } from '@tanstack/react-query';
import { auth } from '../api/resources';
import { CopyButton } from './copy-button';

/** The ingest URL: announced by the API (`GET /v1/setup`), else the same host on port 8081. */
export function useIngestUrl(): string {
  const setup = useQuery({ queryKey: ['setup'], queryFn: auth.setupStatus, staleTime: Infinity });
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
