import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPage, launchChromium, screenshotPath } from "./chromium.fixture.js";
import { type DemoGateway, startDemoGateway } from "./demo-gateway.fixture.js";
import { startTcpProxy, type TcpProxy } from "./tcp-proxy.fixture.js";

let browser: Browser;

beforeAll(async () => {
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close();
});

const conversation = (p: Page) => p.getByRole("list", { name: "Conversation" });
const said = (p: Page, text: string) => conversation(p).locator("li.msg").filter({ hasText: text });
const offline = (p: Page) => p.getByRole("status").filter({ hasText: "Connection lost" });

async function write(p: Page, text: string): Promise<void> {
  await p.getByLabel("Message", { exact: true }).fill(text);
  await p.getByLabel("Message", { exact: true }).press("Enter");
}

/** Opens the web chat as a new visitor (a fresh browser context: its own storage) and logs in without a token. */
async function visit(url: string): Promise<{ page: Page; key: string }> {
  const page = await freshPage(browser, { width: 900, height: 900 });
  await page.goto(`${url}chat`);
  await page.getByRole("heading", { name: "sessions web chat" }).waitFor();
  await page.getByRole("button", { name: "Log in" }).click();
  const key = (await page.locator(".session-key code").textContent()) ?? "";
  return { page, key };
}

describe("the web chat in Chromium, one session per visitor (dmScope per-peer)", () => {
  let demo: DemoGateway;
  let proxy: TcpProxy;
  let page: Page;
  let sessionKey: string;
  /** The user turns of the visitor's session with `text`, as the gateway stored them. */
  const storedUserTurns = async (text: string) => {
    const history = (await demo.gateway.call("chat.history", { sessionKey, limit: 1000 })) as {
      messages: { role: string; content: unknown }[];
    };
    return history.messages.filter((m) => m.role === "user" && JSON.stringify(m.content).includes(text));
  };

  beforeAll(async () => {
    // A loopback gateway without a token; the browser reaches it through a TCP proxy the tests can cut.
    demo = await startDemoGateway({ dmScope: "per-peer", seed: false });
    proxy = await startTcpProxy(demo.server.port);
  });

  afterAll(async () => {
    await proxy?.close();
    await demo?.close();
  });

  it("the page the gateway serves connects from its own origin; the visitor is a direct peer", async () => {
    ({ page, key: sessionKey } = await visit(proxy.url));
    await expect(page.title()).resolves.toBe("sessions console");
    expect(sessionKey).toMatch(/^agent:main:direct:web-[0-9a-f]{20}$/);
    // The empty transcript's prompt shows once the (empty) history has loaded.
    await expect.poll(() => page.getByText("Say hello to start the conversation.").count()).toBe(1);
  });

  it("streams the reply in as it is written", async () => {
    await write(page, "stream please");
    await said(page, "stream please").waitFor();
    const streaming = conversation(page).locator('li[data-role="streaming"]');
    await expect.poll(() => streaming.textContent()).toContain("Streaming the first words");
    await expect(said(page, "then the rest").count()).resolves.toBe(0);
    demo.stream.release();
    await said(page, "Streaming the first words, then the rest.").waitFor();
    await streaming.waitFor({ state: "detached" });
    const entry = (await demo.gateway.sessions.list({})).sessions.find((s) => s.key === sessionKey);
    expect(entry).toMatchObject({ kind: "direct", chatType: "direct" });
  });

  it("keeps the conversation across a reload: the history comes back from the gateway, in order", async () => {
    await page.reload();
    await said(page, "Streaming the first words, then the rest.").waitFor();
    await expect(conversation(page).locator("li.msg").allTextContents()).resolves.toEqual([
      expect.stringContaining("stream please"),
      expect.stringContaining("Streaming the first words, then the rest."),
    ]);
    await expect(page.locator(".session-key code").textContent()).resolves.toBe(sessionKey);
  });

  it("shows a sub-agent's result arriving in the conversation, marked as such, also after a reload", async () => {
    await write(page, "research web chat");
    await said(page, "I asked a research sub-agent").waitFor();
    const result = conversation(page).locator('li[data-role="inter-session"]');
    await result.waitFor();
    await expect(result.locator(".author").textContent()).resolves.toMatch(
      /^sub-agent result · agent:research:subagent:/,
    );
    await expect(result.textContent()).resolves.toContain("Status: success");
    await page.locator(":focus").blur();
    await page.screenshot({ path: screenshotPath("webchat.png") });
    await page.reload();
    await expect
      .poll(() => conversation(page).locator('li[data-role="inter-session"] .author').textContent())
      .toMatch(/^sub-agent result · agent:research:subagent:/);
  });

  it("reconnects when the link drops mid-reply (reset, no close frame) and shows the reply it missed", async () => {
    await write(page, "stream please");
    const streaming = conversation(page).locator('li[data-role="streaming"]');
    await expect.poll(() => streaming.textContent()).toContain("Streaming the first words");
    // Deaf, the proxy lets no reconnect complete (the gateway's answers are lost): the page stays offline, its
    // banner up, until the test has seen it; then the attempt left hanging is cut and the next one goes through.
    proxy.deaf = true;
    proxy.cut();
    await offline(page).waitFor();
    // The run goes on without the page; it ends while the page is away.
    demo.stream.release();
    await demo.idle();
    proxy.deaf = false;
    proxy.cut();
    await offline(page).waitFor({ state: "detached" });
    await expect.poll(() => said(page, "Streaming the first words, then the rest.").count()).toBe(2);
    await streaming.waitFor({ state: "detached" });
    await write(page, "still there?");
    await said(page, "You said: still there?").waitFor();
  });

  it("reconnects after the gateway restarts and catches up on what it missed", async () => {
    await demo.dropConnections(async () => {
      await offline(page).waitFor();
      // Meanwhile the session moves on without this page (an operator writes into it).
      await demo.gateway.call("chat.send", {
        sessionKey,
        message: "while you were away",
        idempotencyKey: "away-1",
      });
      await demo.idle();
    });
    await said(page, "You said: while you were away").waitFor();
    await offline(page).waitFor({ state: "detached" });
    await write(page, "back again");
    await said(page, "You said: back again").waitFor();
  });

  it("a message cut off mid-send is sent again with the same idempotency key: the gateway runs it once", async () => {
    // The gateway receives the send, but its answer never reaches the page; then the link drops.
    proxy.deaf = true;
    await write(page, "only once, please");
    await expect.poll(async () => (await storedUserTurns("only once, please")).length).toBe(1);
    proxy.cut();
    proxy.deaf = false;
    await said(page, "You said: only once, please").waitFor();
    await offline(page).waitFor({ state: "detached" });
    // Reconnected, the page sends it again. Its message stays pending ("sending…") until a send is answered and
    // the transcript holds that run's message: once it is not, a second run would be recorded.
    await conversation(page).locator("li.msg.pending").waitFor({ state: "detached" });
    expect(await storedUserTurns("only once, please")).toHaveLength(1);
    await expect(said(page, "only once, please").count()).resolves.toBe(2); // the message and its one reply
    await expect(page.getByRole("alert").count()).resolves.toBe(0);
  });

  it("shows a message another session sends into the conversation, and the announce that answers it", async () => {
    const from = "agent:ops:console:group:ops";
    await demo.gateway.call("sessions.tools.call", {
      requesterKey: from,
      name: "sessions_send",
      params: { sessionKey, message: "the deploy moved to 15:00", timeoutSeconds: 0 },
    });
    const routed = conversation(page)
      .locator('li[data-role="inter-session"]')
      .filter({ hasText: "the deploy moved to 15:00" });
    await routed.first().waitFor();
    await expect(routed.first().locator(".author").textContent()).resolves.toBe(
      `from session ${from} · sessions_send`,
    );
    // The visitor's agent answers; then the announce step: its prompt, from the sending session, and the answer.
    const replies = conversation(page).locator('li[data-role="assistant"]');
    await replies.filter({ hasText: "You said: the deploy moved to 15:00" }).waitFor();
    const announceStep = conversation(page)
      .locator('li[data-role="inter-session"]')
      .filter({ hasText: "Agent-to-agent announce step." });
    await announceStep.first().waitFor();
    await expect(announceStep.first().locator(".author").textContent()).resolves.toBe(
      `from session ${from} · sessions_send`,
    );
    await replies.filter({ hasText: "Noted (main assistant)." }).waitFor();
  });

  it("a second visitor gets a session of their own", async () => {
    const other = await visit(proxy.url);
    expect(other.key).toMatch(/^agent:main:direct:web-/);
    expect(other.key).not.toBe(sessionKey);
    await expect(conversation(other.page).locator("li.msg").count()).resolves.toBe(0);
    await write(other.page, "hello from visitor two");
    await said(other.page, "You said: hello from visitor two").waitFor();
    await expect(said(page, "hello from visitor two").count()).resolves.toBe(0);
    const keys = (await demo.gateway.sessions.list({})).sessions.map((s) => s.key);
    expect(keys.filter((k) => k.startsWith("agent:main:direct:web-")).sort()).toEqual(
      [sessionKey, other.key].sort(),
    );
    await other.page.close();
  });
});

describe("the web chat in Chromium, under dmScope main", () => {
  let demo: DemoGateway;

  beforeAll(async () => {
    demo = await startDemoGateway({ dmScope: "main", seed: false });
  });

  afterAll(async () => {
    await demo?.close();
  });

  it("puts every visitor in the agent's main session: two visitors, one conversation", async () => {
    const first = await visit(demo.url);
    const second = await visit(demo.url);
    expect([first.key, second.key]).toEqual(["agent:main:main", "agent:main:main"]);
    await write(first.page, "from the first visitor");
    await said(first.page, "You said: from the first visitor").waitFor();
    // The other visitor sees it live: the same session.
    await said(second.page, "You said: from the first visitor").waitFor();
    const keys = (await demo.gateway.sessions.list({})).sessions.map((s) => s.key);
    expect(keys).toEqual(["agent:main:main"]);
    await first.page.close();
    await second.page.close();
  });
});
