import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPage, launchChromium, screenshotPath } from "./chromium.fixture.js";
import { type DemoGateway, startDemoGateway } from "./demo-gateway.fixture.js";

const ADMIN = "admin-token-for-tests";
const MAIN = "agent:main:main";
const OPS = "agent:ops:console:group:ops";
const LOBBY = "agent:ops:console:group:lobby";
const FLAKY = "agent:ops:console:group:flaky";
const ARCHIVE = "agent:ops:console:group:archive";

let demo: DemoGateway;
let browser: Browser;
let page: Page;
/** The keys of the sub-agents the demo story spawned, by label. */
let research: string;
let watcher: string;

async function logIn(token: string): Promise<Page> {
  const p = await freshPage(browser);
  await p.goto(demo.url);
  await p.getByLabel("Token", { exact: true }).fill(token);
  await p.getByLabel("Token", { exact: true }).press("Enter");
  await p.getByRole("status").filter({ hasText: "connected" }).waitFor();
  return p;
}

const row = (p: Page, key: string) => p.locator(`li[data-key="${key}"] > button.session`);
const childrenOf = (p: Page, key: string) => p.locator(`li[data-key="${key}"] > ul > li`);
/** The sessions the tree shows as matches (not the dimmed ancestors kept for shape), sorted. */
const matched = async (p: Page) =>
  (await p.locator("li.node:not(.ancestor)").evaluateAll((els) => els.map((e) => e.getAttribute("data-key"))))
    .map(String)
    .sort();
const ancestors = (p: Page) =>
  p.locator("li.node.ancestor").evaluateAll((els) => els.map((e) => e.getAttribute("data-key")));

async function select(p: Page, key: string): Promise<void> {
  await row(p, key).click();
  await expect.poll(() => p.locator(".facts code").first().textContent()).toBe(key);
}

describe("the operator console in Chromium", () => {
  beforeAll(async () => {
    [demo, browser] = await Promise.all([
      startDemoGateway({ tokens: [{ token: ADMIN, label: "admin" }] }),
      launchChromium(),
    ]);
    const { sessions } = await demo.gateway.sessions.list({ limit: 50 });
    const byLabel = (label: string) => sessions.find((s) => s.label === label && s.spawnedBy === MAIN)?.key;
    research = byLabel("research") ?? "";
    watcher = byLabel("watcher") ?? "";
    expect([research, watcher]).toEqual([
      expect.stringMatching(/^agent:research:subagent:/),
      expect.stringMatching(/^agent:research:subagent:/),
    ]);
  });

  afterAll(async () => {
    await browser?.close();
    await demo?.close();
  });

  it("logs in with a token; a wrong token is refused", async () => {
    const p = await freshPage(browser);
    await p.goto(demo.url);
    await expect(p.title()).resolves.toBe("sessions console");
    await p.getByLabel("Token", { exact: true }).fill("not-the-token");
    await p.getByRole("button", { name: "Log in", exact: true }).click();
    await expect.poll(() => p.getByRole("alert").textContent()).toContain("refused");
    await expect(p.getByRole("navigation", { name: "Console sections" }).count()).resolves.toBe(0);
    await p.close();
    page = await logIn(ADMIN);
    await expect(page.getByRole("navigation", { name: "Console sections" }).isVisible()).resolves.toBe(true);
    await expect(page.locator(".tag.readonly").count()).resolves.toBe(0);
  });

  it("shows the demo's sessions tree: who spawned whom", async () => {
    await row(page, MAIN).waitFor();
    // The researcher and the watcher hang under the main session that spawned them, newest first.
    await expect(
      childrenOf(page, MAIN).evaluateAll((els) => els.map((e) => e.getAttribute("data-key"))),
    ).resolves.toEqual([watcher, research]);
    await expect(childrenOf(page, MAIN).allTextContents()).resolves.toEqual([
      expect.stringContaining("watcher"),
      expect.stringContaining("research"),
    ]);
    await expect(matched(page)).resolves.toEqual(
      [ARCHIVE, FLAKY, LOBBY, OPS, MAIN, research, watcher].sort(),
    );
    await expect(ancestors(page)).resolves.toEqual([]);
    await expect(row(page, OPS).textContent()).resolves.toContain("#ops");
    await expect(row(page, LOBBY).textContent()).resolves.toContain("group");
  });

  it("filters by kind, channel, agent and activity, and searches labels and keys", async () => {
    const filter = (label: string, value: string) =>
      page.getByLabel(label, { exact: true }).selectOption(value);
    const search = (text: string) => page.getByLabel("Search labels and keys", { exact: true }).fill(text);

    await filter("Kind", "group");
    await expect.poll(() => matched(page)).toEqual([ARCHIVE, FLAKY, LOBBY, OPS]);
    await filter("Kind", "main");
    await expect.poll(() => matched(page)).toEqual([MAIN]);
    await filter("Kind", "");

    // The watcher lives in a thread on the console channel; the researcher has no channel of its own.
    await filter("Channel", "unknown");
    await expect.poll(() => matched(page)).toEqual([research]);
    await expect(ancestors(page)).resolves.toEqual([MAIN]);
    await filter("Channel", "console");
    await expect.poll(() => matched(page)).toEqual([ARCHIVE, FLAKY, LOBBY, OPS, MAIN, watcher].sort());
    await filter("Channel", "");

    await filter("Agent", "research");
    // The matches, with their parent kept (dimmed) for the shape of the tree.
    await expect.poll(() => matched(page)).toEqual([research, watcher].sort());
    await expect(ancestors(page)).resolves.toEqual([MAIN]);
    await filter("Agent", "ops");
    await expect.poll(() => matched(page)).toEqual([ARCHIVE, FLAKY, LOBBY, OPS]);
    await filter("Agent", "");

    // #archive was last active three hours ago; everything else just now.
    await filter("Activity", "5m");
    await expect.poll(() => matched(page)).toEqual([FLAKY, LOBBY, OPS, MAIN, research, watcher].sort());
    await filter("Activity", "1h");
    await expect.poll(() => matched(page)).not.toContain(ARCHIVE);
    await filter("Activity", "24h");
    await expect.poll(() => matched(page)).toContain(ARCHIVE);
    // Running now: only the session with a run under way.
    await filter("Activity", "running");
    await expect.poll(() => matched(page)).toEqual([]);
    await demo.gateway.call("chat.send", {
      sessionKey: MAIN,
      message: "slow please",
      idempotencyKey: "f-slow",
    });
    await expect.poll(() => matched(page)).toEqual([MAIN]);
    await demo.gateway.call("chat.abort", { sessionKey: MAIN });
    await expect.poll(() => matched(page)).toEqual([]);
    await filter("Activity", "any");

    // A label alone ("watcher" is in no key), a key ("lobby"), a display name ("#flaky"), case-insensitive.
    await search("WATCHER");
    await expect.poll(() => matched(page)).toEqual([watcher]);
    await expect(ancestors(page)).resolves.toEqual([MAIN]);
    await search("lobby");
    await expect.poll(() => matched(page)).toEqual([LOBBY]);
    await search("#flaky");
    await expect.poll(() => matched(page)).toEqual([FLAKY]);
    // Filters combine.
    await search("o");
    await filter("Kind", "group");
    await filter("Activity", "5m");
    await expect.poll(() => matched(page)).toEqual([FLAKY, LOBBY, OPS]);
    await search("nothing matches this");
    await expect.poll(() => page.locator("li.node").count()).toBe(0);
    await expect(page.getByText("0 of 7 sessions").count()).resolves.toBe(1);
    await search("");
    await filter("Kind", "");
    await filter("Activity", "any");
    await expect.poll(() => page.locator("li.node").count()).toBe(7);
  });

  it("opens a transcript: tool calls and inter-session messages are shown as such", async () => {
    await select(page, MAIN);
    const transcript = page.getByRole("list", { name: "Transcript" });
    await expect
      .poll(() => transcript.textContent())
      .toContain("research how agents coordinate across chats");
    // Tool calls are folded under their name: two spawns (call and result each), a list, a history, two sends.
    const tools = transcript.locator(".tool summary");
    await expect(tools.filter({ hasText: "sessions_spawn" }).count()).resolves.toBe(4);
    for (const tool of ["sessions_list", "sessions_history", "sessions_send"])
      await expect(tools.filter({ hasText: tool }).count()).resolves.toBeGreaterThan(0);
    // A sub-agent's result arrives as an inter-session message from its session, never as the user.
    const results = transcript.locator('li[data-role="inter-session"]');
    await expect(results.first().locator(".author").textContent()).resolves.toBe(
      `sub-agent result · ${research}`,
    );
    await expect(results.first().textContent()).resolves.toContain("Status: success");
    await expect(
      transcript.locator('li[data-role="user"]').filter({ hasText: "Status: success" }).count(),
    ).resolves.toBe(0);
    // A tool call opens with the keyboard and shows its input.
    await tools.first().focus();
    await page.keyboard.press("Enter");
    await expect(transcript.locator("details.tool[open] pre").first().textContent()).resolves.toContain(
      '"agentId": "research"',
    );
    await page.locator(":focus").blur();
    await page.screenshot({ path: screenshotPath("console.png") });

    // In the ops room, main's sessions_send arrives from main's session, marked with the tool that sent it.
    await select(page, OPS);
    const routed = transcript.locator('li[data-role="inter-session"]').first();
    await expect
      .poll(() => routed.locator(".author").textContent())
      .toBe(`from session ${MAIN} · sessions_send`);
    await expect(routed.textContent()).resolves.toContain("schedule the v2 deploy");
  });

  it("keeps the tree live: a new session, a spawned child with its announce, a label set elsewhere", async () => {
    await select(page, MAIN);
    const results = page.locator('li[data-role="inter-session"]');
    await results.first().waitFor();
    // Messages arrive from the chat platform; nothing in the page reloads.
    await demo.gateway.receive({
      channel: "console",
      chatType: "group",
      peerId: "fresh",
      senderId: "sam",
      to: "#fresh",
      text: "a new room",
      agentId: "ops",
    });
    await row(page, "agent:ops:console:group:fresh").waitFor();
    await demo.gateway.receive({
      channel: "console",
      chatType: "direct",
      peerId: "alice",
      senderId: "alice",
      isOwner: true,
      to: "@alice",
      text: "research live consoles",
    });
    await expect.poll(() => childrenOf(page, MAIN).count()).toBe(3);
    const { sessions } = await demo.gateway.sessions.list({ limit: 50 });
    const child = sessions.find((s) => s.spawnedBy === MAIN && s.key !== research && s.key !== watcher);
    const announce = results.filter({ hasText: `sub-agent result · ${child?.key}` });
    await announce.waitFor();
    await expect(announce.textContent()).resolves.toContain("Every chat is a session with a stable key");
    // Another operator labels the new child: the tree shows it without a reload.
    await demo.gateway.call("sessions.patch", { key: child?.key, label: "live consoles" });
    await expect.poll(() => row(page, child?.key ?? "").textContent()).toContain("live consoles");
  });

  it("talks to the gateway over its WebSocket only: no other API, no other host", async () => {
    const p = await freshPage(browser);
    const requests: string[] = [];
    const sockets: string[] = [];
    p.on("request", (r) => requests.push(`${r.method()} ${r.resourceType()} ${r.url()}`));
    p.on("websocket", (ws) => sockets.push(ws.url()));
    await p.goto(demo.url);
    await p.getByLabel("Token", { exact: true }).fill(ADMIN);
    await p.getByLabel("Token", { exact: true }).press("Enter");
    await select(p, MAIN);
    for (const tab of ["Runs", "Outbox", "Bindings", "Sessions"])
      await p.getByRole("button", { name: tab, exact: true }).click();
    await p.goto(`${demo.url}chat`);
    await p.locator(".session-key code").waitFor();
    const origin = demo.url.replace(/\/$/, "");
    const host = new URL(demo.url).host;
    // Static files (GET) from the gateway itself; everything else is frames on the gateway's WebSocket.
    for (const request of requests)
      expect(request).toMatch(
        new RegExp(`^GET (document|script|stylesheet|image|other|websocket) ${origin}/(chat|assets/\\S+)?$`),
      );
    expect(requests.filter((r) => r.startsWith("GET document")).length).toBe(2);
    expect(sockets.length).toBeGreaterThan(0);
    for (const url of sockets) expect(url).toMatch(new RegExp(`^ws://${host}/?$`));
    await p.close();
  });
});
