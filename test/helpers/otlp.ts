import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One attribute value of OTLP/JSON. */
type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };

/** A span as the receiver hands it to tests: ids in hex, attributes as plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string | null;
  name: string;
  kind: number;
  attributes: Record<string, string | number | boolean>;
  links: { traceId: string; spanId: string }[];
  events: { name: string; attributes: Record<string, string | number | boolean> }[];
  status: { code: number; message?: string };
  service: string | undefined;
}

export interface OtlpReceiver {
  /** The traces endpoint, for OTEL_EXPORTER_OTLP_TRACES_ENDPOINT. */
  url: string;
  spans: ReceivedSpan[];
  /** Every request body as received, to look for what must never be exported. */
  raw: string[];
  close(): Promise<void>;
}

function valueOf(value: AnyValue): string | number | boolean {
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.doubleValue !== undefined) return value.doubleValue;
  return JSON.stringify(value);
}

function attributesOf(list: { key: string; value: AnyValue }[] | undefined): Record<string, string | number | boolean> {
  return Object.fromEntries((list ?? []).map((a) => [a.key, valueOf(a.value)]));
}

/** A collector on 127.0.0.1 that accepts OTLP/HTTP JSON on /v1/traces and keeps the spans. */
export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const raw: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        res.writeHead(415).end();
        return;
      }
      const text = Buffer.concat(chunks).toString('utf8');
      raw.push(text);
      const body = JSON.parse(text);
      for (const resourceSpans of body.resourceSpans ?? []) {
        const service = attributesOf(resourceSpans.resource?.attributes)['service.name'] as string | undefined;
        for (const scope of resourceSpans.scopeSpans ?? []) {
          for (const s of scope.spans ?? []) {
            spans.push({
              traceId: s.traceId,
              spanId: s.spanId,
              parentSpanId: s.parentSpanId || null,
              name: s.name,
              kind: s.kind,
              attributes: attributesOf(s.attributes),
              links: (s.links ?? []).map((l: { traceId: string; spanId: string }) => ({ traceId: l.traceId, spanId: l.spanId })),
              events: (s.events ?? []).map((e: { name: string; attributes?: { key: string; value: AnyValue }[] }) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
              status: s.status ?? { code: 0 },
              service,
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1/traces`,
    spans,
    raw,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
