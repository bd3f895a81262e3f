import { trace } from "@opentelemetry/api";
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
} from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll } from "vitest";
import { cleanupDirs } from "../test-kit.js";

/**
 * A test file's spans, exported to memory: registers a global tracer provider for the file and takes it down after
 * (with the harness's temporary folders). Returns the exporter to read and reset, and the provider (to register
 * again after a test that unregistered it).
 */
export function memorySpans(): { exporter: InMemorySpanExporter; provider: BasicTracerProvider } {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  beforeAll(() => {
    trace.setGlobalTracerProvider(provider);
  });
  afterAll(async () => {
    trace.disable();
    await provider.shutdown();
    cleanupDirs();
  });
  return { exporter, provider };
}
