import { createServer, type Server, Socket } from "node:net";

/** A TCP proxy on loopback that tests can cut (kill every socket) or freeze (stop forwarding to the client). */
export interface TestProxy {
  url: string;
  port: number;
  cut(): void;
  freeze(frozen: boolean): void;
  close(): Promise<void>;
}

export async function startProxy(targetPort: number, port = 0): Promise<TestProxy> {
  const pairs = new Set<{ client: Socket; upstream: Socket }>();
  let frozen = false;
  const server: Server = createServer((client) => {
    const upstream = new Socket();
    const pair = { client, upstream };
    pairs.add(pair);
    upstream.connect(targetPort, "127.0.0.1");
    client.on("data", (chunk) => upstream.write(chunk));
    upstream.on("data", (chunk) => {
      if (!frozen) client.write(chunk);
    });
    const end = () => {
      pairs.delete(pair);
      client.destroy();
      upstream.destroy();
    };
    client.on("close", end);
    upstream.on("close", end);
    client.on("error", end);
    upstream.on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(port, "127.0.0.1", resolve));
  const address = server.address() as { port: number };
  return {
    url: `ws://127.0.0.1:${address.port}`,
    port: address.port,
    cut() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream.destroy();
      }
      pairs.clear();
    },
    freeze(value) {
      frozen = value;
    },
    close() {
      for (const pair of pairs) {
        pair.client.destroy();
        pair.upstream.destroy();
      }
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
