import { SessionsError } from "@sessions/core";
import { VERSION } from "./version.js";

/** What `serve` started to export traces, and how to flush and stop it. */
export interface Telemetry {
  /** Where and how spans go, for the startup line. */
  readonly description: string;
  /** Sends what is still buffered and stops. */
  shutdown(): Promise<void>;
}

const PROTOCOLS = ["http/protobuf", "http/json"] as const;

/**
 * Exports the gateway's traces the standard way: with `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` or
 * `OTEL_EXPORTER_OTLP_ENDPOINT` set, spans go over OTLP/HTTP (`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` /
 * `OTEL_EXPORTER_OTLP_PROTOCOL`: `http/protobuf` by default, or `http/json`), named by `OTEL_SERVICE_NAME`
 * (default `sessions-gateway`); the exporters read the endpoint, headers and timeout variables themselves.
 * Unset (or `OTEL_TRACES_EXPORTER=none`, or `OTEL_SDK_DISABLED=true`): nothing is loaded.
 *
 * @throws SessionsError `invalid_config` naming the variable, for a protocol other than those two (gRPC is not
 * bundled).
 */
export async function startTelemetry(env: NodeJS.ProcessEnv = process.env): Promise<Telemetry | undefined> {
  const endpoint = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT;
  if (!endpoint || env.OTEL_TRACES_EXPORTER === "none" || env.OTEL_SDK_DISABLED === "true") return undefined;
  const variable = env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL
    ? "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
    : "OTEL_EXPORTER_OTLP_PROTOCOL";
  const protocol = env[variable] || "http/protobuf";
  if (!(PROTOCOLS as readonly string[]).includes(protocol)) {
    throw new SessionsError(
      "invalid_config",
      `${variable}=${protocol} is not supported: use ${PROTOCOLS.join(" or ")}`,
      { field: variable },
    );
  }
  const [{ trace }, { BasicTracerProvider, BatchSpanProcessor }, { resourceFromAttributes }] =
    await Promise.all([
      import("@opentelemetry/api"),
      import("@opentelemetry/sdk-trace-base"),
      import("@opentelemetry/resources"),
    ]);
  const { OTLPTraceExporter } =
    protocol === "http/json"
      ? await import("@opentelemetry/exporter-trace-otlp-http")
      : await import("@opentelemetry/exporter-trace-otlp-proto");
  const service = env.OTEL_SERVICE_NAME || "sessions-gateway";
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": service, "service.version": VERSION }),
    spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter())],
  });
  // A provider registered before (auto-instrumentation loaded with --require) keeps the spans: say so, leave it be.
  if (!trace.setGlobalTracerProvider(provider)) {
    await provider.shutdown();
    return {
      description: "traces → the tracer provider already registered in this process",
      async shutdown() {},
    };
  }
  return {
    description: `traces → ${endpoint} (${protocol}, service ${service})`,
    async shutdown() {
      await provider.shutdown();
      trace.disable();
    },
  };
}
