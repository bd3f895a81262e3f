import { readFileSync, statSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { extname, join, resolve, sep } from "node:path";
import { SessionsError } from "@sessions/core";

/** Plain HTTP beside the WebSocket: a folder of static files (the console), read-only, GET and HEAD. */

const TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".webmanifest": "application/manifest+json",
  ".woff2": "font/woff2",
  ".txt": "text/plain; charset=utf-8",
};

/** The page may talk to gateways (WebSocket) and nothing else; it cannot be framed. */
const SECURITY_HEADERS = {
  "content-security-policy":
    "default-src 'self'; connect-src 'self' ws: wss:; img-src 'self' data:; style-src 'self'; script-src 'self'; " +
    "object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
};

const LOOPBACK_HOSTNAME = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/i;

/**
 * Whether a browser `Origin` is the page this server itself served on a loopback address: same scheme-less host
 * and port as the request's `Host`, and that host is loopback. A DNS-rebound name (`evil.example` resolving to
 * 127.0.0.1) carries its own name in both headers and is not loopback, so it stays refused.
 */
export function isSameLoopbackOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false;
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") return false;
  return url.host.toLowerCase() === host.toLowerCase() && LOOPBACK_HOSTNAME.test(url.hostname);
}

/**
 * Serves the files under `dir` (`/` and paths without an extension get `index.html`, for a single-page app).
 * @throws SessionsError `invalid_config` naming `http.static` when `dir` has no `index.html`.
 */
export function createStaticHandler(dir: string): (req: IncomingMessage, res: ServerResponse) => void {
  const root = resolve(dir);
  const indexFile = join(root, "index.html");
  try {
    if (!statSync(root).isDirectory()) throw new Error("not a directory");
    readFileSync(indexFile);
  } catch (error) {
    throw new SessionsError(
      "invalid_config",
      `listen: http.static ${root} must be a folder with an index.html (${(error as Error).message})`,
      { field: "http.static" },
    );
  }

  const send = (
    res: ServerResponse,
    head: boolean,
    status: number,
    type: string,
    body: Buffer,
    cache: string,
  ) => {
    res.writeHead(status, {
      ...SECURITY_HEADERS,
      "content-type": type,
      "content-length": body.length,
      "cache-control": cache,
    });
    res.end(head ? undefined : body);
  };
  const plain = (res: ServerResponse, status: number, text: string, extra: Record<string, string> = {}) => {
    res.writeHead(status, { ...SECURITY_HEADERS, ...extra, "content-type": "text/plain; charset=utf-8" });
    res.end(`${text}\n`);
  };

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== "GET" && req.method !== "HEAD")
      return plain(res, 405, "method not allowed", { allow: "GET, HEAD" });
    const head = req.method === "HEAD";
    let path: string;
    try {
      path = decodeURIComponent(new URL(req.url ?? "/", "http://x").pathname);
    } catch {
      return plain(res, 400, "bad path");
    }
    if (path.includes("\0")) return plain(res, 400, "bad path");
    const file = resolve(root, `.${path}`);
    if (file !== root && !file.startsWith(root + sep)) return plain(res, 404, "not found");
    const ext = extname(file).toLowerCase();
    if (path.endsWith("/") || ext === "")
      return send(res, head, 200, TYPES[".html"] as string, await readFile(indexFile), "no-cache");
    const type = TYPES[ext];
    try {
      if (type === undefined || !(await stat(file)).isFile()) return plain(res, 404, "not found");
      const body = await readFile(file);
      // Vite names built assets by content hash: they never change under one name.
      const immutable = path.startsWith("/assets/");
      send(res, head, 200, type, body, immutable ? "public, max-age=31536000, immutable" : "no-cache");
    } catch {
      plain(res, 404, "not found");
    }
  }

  return (req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) plain(res, 500, "internal error");
      else res.destroy();
    });
  };
}
