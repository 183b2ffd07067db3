/**
 * Writes `schemas/otlp/trace.descriptor.json`: the protobufjs reflection JSON of the vendored OTLP
 * trace `.proto` files (schemas/otlp/README.md). The service loads the descriptor instead of the
 * `.proto` files, so the compiled build (`dist/`, which holds no `.proto` file) decodes the same
 * messages.
 * Run: `npx tsx services/ingest/otlp/generate-descriptor.ts`, then prettier on the output.
 */
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import protobuf from 'protobufjs';

const here = path.dirname(fileURLToPath(import.meta.url));
export const PROTO_DIR = path.resolve(here, '../../../schemas/otlp');
export const ENTRY_PROTO = 'opentelemetry/proto/collector/trace/v1/trace_service.proto';
export const DESCRIPTOR_FILE = path.join(PROTO_DIR, 'trace.descriptor.json');

/** The reflection JSON of the vendored `.proto` files (field names in lowerCamelCase). */
export async function loadDescriptor(): Promise<protobuf.INamespace> {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => path.join(PROTO_DIR, target);
  await root.load(ENTRY_PROTO, { keepCase: false });
  root.resolveAll();
  return root.toJSON();
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const descriptor = await loadDescriptor();
  writeFileSync(DESCRIPTOR_FILE, `${JSON.stringify(descriptor, null, 2)}\n`);
  console.log(`wrote ${DESCRIPTOR_FILE}`);
}
