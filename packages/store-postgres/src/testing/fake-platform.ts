import { createServer, type IncomingMessage, type Server } from "node:http";

export interface PlatformPost {
  gateway: string;
  key: string;
  to: string;
  text: string;
  at: number;
}

/**
 * A chat platform on 127.0.0.1 (the outside world of the failover test): it posts each message once per
 * idempotency key (a repeat gets the first message's id back, as Discord nonces and Telegram dedupe do), records
 * every request, and can leave one gateway's sends unanswered (a slow platform, at the moment that gateway dies or
 * loses its database) until it releases them.
 */
export async function startFakePlatform() {
  const posts: PlatformPost[] = [];
  const messages = new Map<string, PlatformPost & { id: string }>();
  const connections: { gateway: string; event: string; at: number }[] = [];
  let hold: string | undefined;
  const held = new Map<IncomingMessage, () => void>();

  const read = (req: IncomingMessage) =>
    new Promise<Record<string, string>>((resolve, reject) => {
      let body = "";
      req.on("data", (chunk) => {
        body += String(chunk);
      });
      req.on("end", () => resolve(JSON.parse(body) as Record<string, string>));
      req.on("error", reject);
    });

  const server: Server = createServer((req, res) => {
    void read(req).then((body) => {
      if (req.url === "/connection") {
        connections.push({ gateway: body.gateway ?? "", event: body.event ?? "", at: Date.now() });
        res.end("{}");
        return;
      }
      const post: PlatformPost = {
        gateway: body.gateway ?? "",
        key: body.key ?? "",
        to: body.to ?? "",
        text: body.text ?? "",
        at: Date.now(),
      };
      const answer = () => {
        posts.push(post);
        let message = messages.get(post.key);
        if (message === undefined) {
          message = { ...post, id: `msg-${messages.size + 1}` };
          messages.set(post.key, message);
        }
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ messageIds: [message.id] }));
      };
      // Not answered until `release()`: the sender dies meanwhile, or loses its database.
      if (post.gateway === hold) held.set(req, answer);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    posts,
    messages,
    connections,
    /** Sends from `gateway` are left hanging from now on. */
    holdSendsFrom(gateway: string) {
      hold = gateway;
    },
    heldCount: () => held.size,
    /** Sends are answered again, and the held ones now (posted as they arrived). */
    release() {
      hold = undefined;
      for (const answer of held.values()) answer();
      held.clear();
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
