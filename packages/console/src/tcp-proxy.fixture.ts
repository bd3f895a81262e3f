import { connect, createServer, type Socket } from "node:net";

/**
 * The network between the browser and the gateway: a TCP proxy on 127.0.0.1 that a test can cut (every open
 * connection reset at once, with no WebSocket close frame: a dropped link, not a gateway that says goodbye) or make
 * deaf (what the gateway sends stops arriving, what the browser sends still goes through).
 */
export interface TcpProxy {
  /** `http://127.0.0.1:<port>/`: the gateway's pages and WebSocket, through the proxy. */
  readonly url: string;
  /** Drops what the gateway sends to the browser while true (requests reach the gateway, answers are lost). */
  deaf: boolean;
  /** Connections open right now. */
  open(): number;
  /** Resets every open connection (both sides). New connections are accepted as before. */
  cut(): void;
  close(): Promise<void>;
}

export async function startTcpProxy(targetPort: number): Promise<TcpProxy> {
  const pairs = new Set<[Socket, Socket]>();
  const server = createServer((browser) => {
    const gateway = connect(targetPort, "127.0.0.1");
    const pair: [Socket, Socket] = [browser, gateway];
    pairs.add(pair);
    const end = () => {
      pairs.delete(pair);
      browser.destroy();
      gateway.destroy();
    };
    browser.on("data", (chunk) => gateway.write(chunk));
    gateway.on("data", (chunk) => {
      if (!proxy.deaf) browser.write(chunk);
    });
    for (const socket of pair) {
      socket.on("error", end);
      socket.on("close", end);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (address === null || typeof address === "string") throw new Error("proxy: no port");
  const proxy: TcpProxy = {
    url: `http://127.0.0.1:${address.port}/`,
    deaf: false,
    open: () => pairs.size,
    cut() {
      for (const pair of [...pairs]) {
        pairs.delete(pair);
        for (const socket of pair) socket.resetAndDestroy();
      }
    },
    close() {
      proxy.cut();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  return proxy;
}
