import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, screenshotPath } from "./chromium.fixture.js";
import { type DemoGateway, startDemoGateway } from "./demo-gateway.fixture.js";

let demo: DemoGateway;
let browser: Browser;
let page: Page;
let sessionKey: string;

const conversation = () => page.getByRole("list", { name: "Conversation" });
const said = (text: string) => conversation().locator("li.msg").filter({ hasText: text });

async function write(text: string): Promise<void> {
  await page.getByLabel("Message", { exact: true }).fill(text);
  await page.getByLabel("Message", { exact: true }).press("Enter");
}

describe("the web chat in Chromium", () => {
  beforeAll(async () => {
    // A loopback gateway without a token, per-peer DMs: each visitor gets a session of their own.
    [demo, browser] = await Promise.all([
      startDemoGateway({ dmScope: "per-peer", seed: false }),
      launchChromium(),
    ]);
    page = await browser.newPage({ viewport: { width: 900, height: 900 } });
  });

  afterAll(async () => {
    await browser?.close();
    await demo?.close();
  });

  it("the page the gateway serves connects from its own origin; the visitor is a direct peer", async () => {
    await page.goto(`${demo.url}chat`);
    await expect(page.title()).resolves.toBe("sessions console");
    await page.getByRole("heading", { name: "sessions web chat" }).waitFor();
    await page.getByRole("button", { name: "Log in" }).click();
    await page.locator(".session-key code").waitFor();
    sessionKey = (await page.locator(".session-key code").textContent()) ?? "";
    expect(sessionKey).toMatch(/^agent:main:direct:web-[0-9a-f]{20}$/);
  });

  it("streams the reply in as it is written", async () => {
    await write("stream please");
    await said("stream please").waitFor();
    const streaming = conversation().locator('li[data-role="streaming"]');
    await expect.poll(() => streaming.textContent()).toContain("Streaming the first words");
    await expect(said("then the rest").count()).resolves.toBe(0);
    demo.stream.release();
    await said("Streaming the first words, then the rest.").waitFor();
    await streaming.waitFor({ state: "detached" });
    const entry = (await demo.gateway.sessions.list({})).sessions.find((s) => s.key === sessionKey);
    expect(entry).toMatchObject({ kind: "direct", chatType: "direct" });
  });

  it("keeps the conversation across a reload", async () => {
    await page.reload();
    await said("Streaming the first words, then the rest.").waitFor();
    await expect(said("stream please").count()).resolves.toBe(1);
    await expect(page.locator(".session-key code").textContent()).resolves.toBe(sessionKey);
  });

  it("reconnects after a dropped connection and catches up on what it missed", async () => {
    await demo.dropConnections(async () => {
      await page.getByRole("status").filter({ hasText: "Connection lost" }).waitFor();
      // Meanwhile the session moves on without this page (an operator writes into it).
      await demo.gateway.call("chat.send", {
        sessionKey,
        message: "while you were away",
        idempotencyKey: "away-1",
      });
      await demo.idle();
    });
    await said("You said: while you were away").waitFor();
    await page.getByRole("status").filter({ hasText: "Connection lost" }).waitFor({ state: "detached" });
    await write("back again");
    await said("You said: back again").waitFor();
  });

  it("shows a sub-agent's result arriving in the conversation, marked as such", async () => {
    await write("research web chat");
    await said("I asked a research sub-agent").waitFor();
    const result = conversation().locator('li[data-role="inter-session"]');
    await result.waitFor();
    await expect(result.locator(".author").textContent()).resolves.toMatch(
      /^sub-agent result · agent:research:subagent:/,
    );
    await expect(result.textContent()).resolves.toContain("Status: success");
    await page.screenshot({ path: screenshotPath("webchat.png") });
  });

  it("a second visitor gets a session of their own", async () => {
    const other = await browser.newPage();
    await other.goto(`${demo.url}chat`);
    await other.getByRole("button", { name: "Log in" }).click();
    const key = await other.locator(".session-key code").textContent();
    expect(key).toMatch(/^agent:main:direct:web-/);
    expect(key).not.toBe(sessionKey);
    await expect(other.getByRole("list", { name: "Conversation" }).locator("li.msg").count()).resolves.toBe(
      0,
    );
    await other.close();
  });
});
