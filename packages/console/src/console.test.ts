import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchChromium, screenshotPath } from "./chromium.fixture.js";
import { type DemoGateway, startDemoGateway } from "./demo-gateway.fixture.js";

const ADMIN = "admin-token-for-tests";
const READER = "reader-token-for-tests";
const MAIN = "agent:main:main";
const OPS = "agent:ops:console:group:ops";

let demo: DemoGateway;
let browser: Browser;
let page: Page;

async function logIn(token: string, viewport = { width: 1280, height: 900 }): Promise<Page> {
  const p = await browser.newPage({ viewport });
  await p.goto(demo.url);
  await p.getByLabel("Token", { exact: true }).fill(token);
  await p.getByLabel("Token", { exact: true }).press("Enter");
  await p.getByRole("status").filter({ hasText: "connected" }).waitFor();
  return p;
}

const row = (p: Page, key: string) => p.locator(`li[data-key="${key}"] > button.session`);
const childrenOf = (p: Page, key: string) => p.locator(`li[data-key="${key}"] > ul > li`);

async function select(p: Page, key: string): Promise<void> {
  // Keyboard: focus the row and press Enter.
  await row(p, key).focus();
  await p.keyboard.press("Enter");
  await p.getByRole("heading", { level: 2 }).and(p.locator("#detail-title")).waitFor();
  await expect.poll(() => p.locator(".facts code").first().textContent()).toBe(key);
}

describe("the operator console in Chromium", () => {
  beforeAll(async () => {
    [demo, browser] = await Promise.all([
      startDemoGateway({
        tokens: [
          { token: ADMIN, label: "admin" },
          { token: READER, label: "reader", scopes: ["operator.read"] },
        ],
      }),
      launchChromium(),
    ]);
  });

  afterAll(async () => {
    await browser?.close();
    await demo?.close();
  });

  it("logs in with a token; a wrong token is refused", async () => {
    const p = await browser.newPage();
    await p.goto(demo.url);
    await expect(p.title()).resolves.toBe("sessions console");
    await p.getByLabel("Token", { exact: true }).fill("not-the-token");
    await p.getByRole("button", { name: "Log in", exact: true }).click();
    await expect.poll(() => p.getByRole("alert").textContent()).toContain("refused");
    await p.close();
    page = await logIn(ADMIN);
    await expect(page.getByRole("navigation", { name: "Console sections" }).isVisible()).resolves.toBe(true);
    await expect(page.locator(".tag.readonly").count()).resolves.toBe(0);
  });

  it("shows the demo's sessions tree, with filters", async () => {
    await row(page, MAIN).waitFor();
    // The researcher and the watcher hang under the main session that spawned them.
    await expect(childrenOf(page, MAIN).count()).resolves.toBe(2);
    await expect(childrenOf(page, MAIN).allTextContents()).resolves.toEqual([
      expect.stringContaining("watcher"),
      expect.stringContaining("research"),
    ]);
    await expect(row(page, OPS).textContent()).resolves.toContain("#ops");
    await expect(row(page, "agent:ops:console:group:lobby").textContent()).resolves.toContain("group");

    await page.getByLabel("Kind", { exact: true }).selectOption("group");
    await expect.poll(() => page.locator("li.node:not(.ancestor)").count()).toBe(3);
    await page.getByLabel("Kind", { exact: true }).selectOption("");
    await page.getByLabel("Agent", { exact: true }).selectOption("research");
    // The matches, with their parent kept (dimmed) for the shape of the tree.
    await expect.poll(() => page.locator("li.node:not(.ancestor)").count()).toBe(2);
    await expect(page.locator("li.node.ancestor").getAttribute("data-key")).resolves.toBe(MAIN);
    await page.getByLabel("Agent", { exact: true }).selectOption("");
    await page.getByLabel("Search labels and keys", { exact: true }).fill("lobby");
    await expect.poll(() => page.locator("li.node").count()).toBe(1);
    await page.getByLabel("Search labels and keys", { exact: true }).fill("");
    await page.getByLabel("Activity", { exact: true }).selectOption("5m");
    await expect.poll(() => page.locator("li.node").count()).toBe(6);
    await page.getByLabel("Channel", { exact: true }).selectOption("console");
    await expect.poll(() => page.locator("li.node:not(.ancestor)").count()).toBe(5);
    await page.getByLabel("Channel", { exact: true }).selectOption("");
    await page.getByLabel("Activity", { exact: true }).selectOption("any");
  });

  it("opens a transcript: tool calls and inter-session messages are shown as such", async () => {
    await select(page, MAIN);
    const transcript = page.getByRole("list", { name: "Transcript" });
    await expect
      .poll(() => transcript.textContent())
      .toContain("research how agents coordinate across chats");
    await expect(
      transcript.locator(".tool summary").filter({ hasText: "sessions_spawn" }).count(),
    ).resolves.toBe(4);
    const result = transcript.locator('li[data-role="inter-session"]').first();
    await expect(result.locator(".author").textContent()).resolves.toMatch(
      /^sub-agent result · agent:research:subagent:/,
    );
    await expect(result.textContent()).resolves.toContain("Status: success");
    // A tool call opens with the keyboard.
    await transcript.locator(".tool summary").first().focus();
    await page.keyboard.press("Enter");
    await expect(transcript.locator("details.tool[open] pre").first().textContent()).resolves.toContain(
      '"agentId": "research"',
    );
    await page.locator(":focus").blur();
    await page.screenshot({ path: screenshotPath("console.png") });

    await select(page, OPS);
    const routed = transcript.locator('li[data-role="inter-session"]').first();
    await expect
      .poll(() => routed.locator(".author").textContent())
      .toBe(`from session ${MAIN} · sessions_send`);
  });

  it("changes a session's visibility and clears it again", async () => {
    await select(page, MAIN);
    await page.getByLabel("Visibility", { exact: true }).selectOption("self");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await expect.poll(() => page.locator(".settings [role=status]").textContent()).toBe("Saved.");
    const visibilityOf = async () =>
      (await demo.gateway.sessions.list({ limit: 50 })).sessions.find((s) => s.key === MAIN)?.visibility;
    expect(await visibilityOf()).toBe("self");
    await page.getByLabel("Visibility", { exact: true }).selectOption("inherit");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await expect.poll(visibilityOf).toBeUndefined();
  });

  it("denies sends for a session: a sessions_send to it is refused at delivery, a delivering send at once", async () => {
    await select(page, OPS);
    await page.getByLabel("Send policy", { exact: true }).selectOption("deny");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await expect.poll(() => page.locator(".settings [role=status]").textContent()).toBe("Saved.");
    await expect.poll(() => row(page, OPS).textContent()).toContain("sends denied");
    const entry = (await demo.gateway.sessions.list({ limit: 50 })).sessions.find((s) => s.key === OPS);
    expect(entry?.sendPolicy).toBe("deny");

    // The operator asks for a delivered reply in the denied room: refused by the gateway.
    await page.getByLabel("Message as operator", { exact: true }).fill("anyone here?");
    await page.getByLabel("Deliver the reply to the session's channel", { exact: true }).check();
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await expect
      .poll(() => page.locator(".composer [role=alert]").textContent())
      .toContain("Send policy denies");

    // Main's agent calls sessions_send to the room: the run happens, its announce is suppressed.
    await select(page, MAIN);
    await page.getByLabel("Message as operator", { exact: true }).fill("tell ops the deploy moved to 15:00");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await demo.idle();
    await page.getByRole("button", { name: "Outbox", exact: true }).click();
    await page.getByLabel("Status", { exact: true }).selectOption("suppressed");
    const card = page.locator(`li.card[data-status="suppressed"]`).filter({ hasText: OPS });
    await expect.poll(() => card.count()).toBeGreaterThan(0);
    await expect(card.first().locator(".reason").textContent()).resolves.toMatch(/deny/);
    expect(demo.posted.filter((p) => p.to === "#ops" && p.kind === "announce")).toHaveLength(1);
    await page.screenshot({ path: screenshotPath("console-outbox.png") });
    await page.getByRole("button", { name: "Sessions", exact: true }).click();
  });

  it("aborts a running run", async () => {
    await select(page, MAIN);
    await page.getByLabel("Message as operator", { exact: true }).fill("slow job, please");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    const live = page.getByRole("region", { name: "Runs under way" });
    await live.getByRole("button", { name: "Abort run", exact: true }).click();
    await live.waitFor({ state: "detached" });
    await page.getByRole("button", { name: "Runs", exact: true }).click();
    await expect.poll(() => page.locator(".tag.state-aborted").count()).toBe(1);
    await expect((await demo.gateway.store.listRunsByStatus(["running", "queued"])).length).toBe(0);
    await page.getByRole("button", { name: "Sessions", exact: true }).click();
  });

  it("shows a spawned child appear live, with its announce in the parent's transcript", async () => {
    await select(page, MAIN);
    const results = page.locator('li[data-role="inter-session"]');
    await expect.poll(() => results.count()).toBeGreaterThan(0);
    const before = await results.count();
    // A message arrives from the chat platform; nothing in the page reloads.
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
    await expect.poll(() => results.count()).toBe(before + 1);
    await expect(results.last().textContent()).resolves.toContain(
      "Every chat is a session with a stable key.",
    );
  });

  it("retries a failed delivery from the outbox", async () => {
    await page.getByRole("button", { name: "Outbox", exact: true }).click();
    await page.getByLabel("Status", { exact: true }).selectOption("");
    const card = page.locator("li.card").filter({ hasText: "#flaky" });
    await expect.poll(() => card.getAttribute("data-status")).toBe("failed");
    await expect(card.locator(".reason").textContent()).resolves.toBe("the #flaky room is unreachable");
    demo.flaky.down = false;
    await card.getByRole("button", { name: "Retry", exact: true }).click();
    await expect.poll(() => card.getAttribute("data-status")).toBe("delivered");
    expect(demo.posted.filter((p) => p.to === "#flaky")).toHaveLength(1);
  });

  it("lists thread bindings", async () => {
    await page.getByRole("button", { name: "Bindings", exact: true }).click();
    const rows = page.locator(".grid tbody tr");
    await expect.poll(() => rows.count()).toBe(1);
    await expect(rows.first().textContent()).resolves.toContain("console:@alice › thread 1");
    await rows.first().getByRole("button").click();
    await expect.poll(() => page.locator("#detail-title").textContent()).toBe("watcher");
  });

  it("works at phone width", async () => {
    const phone = await logIn(ADMIN, { width: 390, height: 844 });
    await row(phone, MAIN).click();
    await phone.getByRole("button", { name: "← Sessions", exact: true }).waitFor();
    await expect(phone.locator(".tree-pane").isVisible()).resolves.toBe(false);
    const width = await phone.evaluate(() => document.documentElement.scrollWidth);
    expect(width).toBeLessThanOrEqual(390);
    await phone.screenshot({ path: screenshotPath("console-phone.png") });
    await phone.getByRole("button", { name: "← Sessions", exact: true }).click();
    await expect(phone.locator(".tree-pane").isVisible()).resolves.toBe(true);
    await phone.close();
  });

  it("a read-only token sees everything and can change nothing", async () => {
    const reader = await logIn(READER);
    await reader.locator(".tag.readonly").waitFor();
    await select(reader, OPS);
    await expect(reader.getByRole("button", { name: "Save", exact: true }).isDisabled()).resolves.toBe(true);
    await expect(reader.getByLabel("Send policy", { exact: true }).isDisabled()).resolves.toBe(true);
    await expect(reader.getByLabel("Label", { exact: true }).isDisabled()).resolves.toBe(true);
    await expect(reader.getByLabel("Message as operator", { exact: true }).count()).resolves.toBe(0);
    await expect.poll(() => reader.getByRole("list", { name: "Transcript" }).textContent()).toContain("v2");
    // Even a request made by hand from the page is refused by the gateway.
    const outcome = await reader.evaluate(async () => {
      const ws = new WebSocket(`ws://${location.host}`);
      const frames: { id?: string; ok?: boolean; error?: { details?: { code?: string } } }[] = [];
      ws.onmessage = (e) => frames.push(JSON.parse(String(e.data)));
      await new Promise((r) => (ws.onopen = r));
      const call = (id: string, method: string, params: unknown) => {
        ws.send(JSON.stringify({ type: "req", id, method, params }));
        return new Promise<(typeof frames)[number]>((resolve) => {
          const check = () => {
            const found = frames.find((f) => f.id === id);
            if (found) resolve(found);
            else setTimeout(check, 10);
          };
          check();
        });
      };
      await new Promise((r) => setTimeout(r, 50));
      const client = { id: "probe", version: "0", platform: "browser", mode: "backend" };
      const token = JSON.parse(sessionStorage.getItem("sessions.console.login") ?? "{}").token;
      await call("c", "connect", {
        minProtocol: 4,
        maxProtocol: 4,
        client,
        scopes: ["operator.admin"],
        auth: { token },
      });
      const patched = await call("p", "sessions.patch", {
        key: "agent:ops:console:group:ops",
        sendPolicy: "allow",
      });
      ws.close();
      return patched;
    });
    expect(outcome.ok).toBe(false);
    const entry = (await demo.gateway.sessions.list({ limit: 50 })).sessions.find((s) => s.key === OPS);
    expect(entry?.sendPolicy).toBe("deny");
    await reader.close();
  });
});
