import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { WebSocket } from "ws";
import { createGateway } from "../create-gateway.js";
import type { Gateway } from "../gateway.js";
import { createScriptedRunner } from "../runner/scripted.js";
import { createMemoryStore } from "../store/memory.js";
import type { GatewayServer } from "./listen.js";
import { isSameLoopbackOrigin } from "./static-files.js";

interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function get(
  port: number,
  path: string,
  method = "GET",
  headers: Record<string, string> = {},
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, path, method, headers }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** Opens a WebSocket with `origin` and says whether the upgrade was accepted. */
function upgrade(url: string, origin: string | undefined, host?: string): Promise<boolean> {
  return new Promise((resolve) => {
    const ws = new WebSocket(url, {
      ...(origin === undefined ? {} : { origin }),
      ...(host === undefined ? {} : { headers: { host } }),
    });
    ws.once("open", () => {
      ws.close();
      resolve(true);
    });
    ws.once("error", () => resolve(false));
    ws.once("unexpected-response", () => resolve(false));
  });
}

describe("listen({ http: { static } })", () => {
  let dir: string;
  let gateway: Gateway;
  let server: GatewayServer;
  let plain: GatewayServer;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "sessions-static-"));
    mkdirSync(join(dir, "assets"));
    writeFileSync(join(dir, "index.html"), "<!doctype html><title>console</title>");
    writeFileSync(join(dir, "assets", "app-1a2b.js"), "console.log(1)");
    writeFileSync(join(dir, "..", "secret.txt"), "do not serve");
    gateway = createGateway({
      store: createMemoryStore(),
      runner: createScriptedRunner({ agents: {}, fallback: () => "ok" }),
    });
    server = await gateway.listen({ http: { static: dir } });
    plain = await gateway.listen({});
  });

  afterAll(async () => {
    await server.close();
    await plain.close();
    await gateway.close();
    rmSync(dir, { recursive: true, force: true });
    rmSync(join(dir, "..", "secret.txt"), { force: true });
  });

  it("serves index.html at / and for app routes, assets with their type, and nothing outside the folder", async () => {
    const index = await get(server.port, "/");
    expect(index.status).toBe(200);
    expect(index.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(index.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(index.body).toContain("<title>console</title>");
    expect((await get(server.port, "/chat")).body).toContain("<title>console</title>");

    const asset = await get(server.port, "/assets/app-1a2b.js");
    expect(asset.status).toBe(200);
    expect(asset.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(asset.headers["cache-control"]).toContain("immutable");

    expect((await get(server.port, "/assets/missing.js")).status).toBe(404);
    expect((await get(server.port, "/../secret.txt")).status).toBe(404);
    expect((await get(server.port, "/%2e%2e/secret.txt")).status).toBe(404);
    expect((await get(server.port, "/%E0%A4%A")).status).toBe(400);
    const post = await get(server.port, "/", "POST");
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe("GET, HEAD");
    const head = await get(server.port, "/", "HEAD");
    expect(head.status).toBe(200);
    expect(head.body).toBe("");
  });

  it("without the option, plain HTTP still answers 426", async () => {
    expect((await get(plain.port, "/")).status).toBe(426);
  });

  it("refuses a folder without index.html as invalid_config naming http.static", async () => {
    await expect(gateway.listen({ http: { static: join(dir, "assets") } })).rejects.toMatchObject({
      code: "invalid_config",
      field: "http.static",
    });
  });

  it("lets the page it served connect without a token; foreign and rebound origins stay refused", async () => {
    const own = `http://127.0.0.1:${server.port}`;
    expect(await upgrade(server.url, own)).toBe(true);
    expect(await upgrade(server.url, undefined)).toBe(true);
    expect(await upgrade(server.url, "https://evil.example")).toBe(false);
    // DNS rebinding: the attacker's name in both Origin and Host.
    expect(
      await upgrade(server.url, `http://evil.example:${server.port}`, `evil.example:${server.port}`),
    ).toBe(false);
    // Without a served page there is no own origin to allow.
    expect(await upgrade(plain.url, `http://127.0.0.1:${plain.port}`)).toBe(false);
  });

  it("isSameLoopbackOrigin accepts only a loopback origin equal to the Host", () => {
    expect(isSameLoopbackOrigin("http://localhost:8080", "localhost:8080")).toBe(true);
    expect(isSameLoopbackOrigin("http://[::1]:8080", "[::1]:8080")).toBe(true);
    expect(isSameLoopbackOrigin("http://127.0.0.1:8080", "127.0.0.1:8081")).toBe(false);
    expect(isSameLoopbackOrigin("http://10.0.0.2:8080", "10.0.0.2:8080")).toBe(false);
    expect(isSameLoopbackOrigin("null", "127.0.0.1:8080")).toBe(false);
    expect(isSameLoopbackOrigin("http://127.0.0.1:8080", undefined)).toBe(false);
    fc.assert(
      fc.property(fc.domain(), fc.integer({ min: 1, max: 65535 }), (name, port) => {
        const host = `${name}:${port}`;
        const loopback = name === "localhost";
        expect(isSameLoopbackOrigin(`http://${host}`, host)).toBe(loopback);
      }),
    );
  });
});
