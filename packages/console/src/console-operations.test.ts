import { demoAlice, demoRoom } from "@sessions/testing/demo";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freshPage, launchChromium, screenshotPath } from "./chromium.fixture.js";
import { type DemoGateway, startDemoGateway } from "./demo-gateway.fixture.js";

const ADMIN = "admin-token-for-tests";
const READER = "reader-token-for-tests";
const MAIN = "agent:main:main";
const OPS = "agent:ops:console:group:ops";

let demo: DemoGateway;
let browser: Browser;
let page: Page;

async function logIn(token: string): Promise<Page> {
  const p = await freshPage(browser);
  await p.goto(demo.url);
  await p.getByLabel("Token", { exact: true }).fill(token);
  await p.getByLabel("Token", { exact: true }).press("Enter");
  await p.getByRole("status").filter({ hasText: "connected" }).waitFor();
  return p;
}

const row = (p: Page, key: string) => p.locator(`li[data-key="${key}"] > button.session`);
const entry = async (key: string) =>
  (await demo.gateway.sessions.list({ limit: 50 })).sessions.find((s) => s.key === key);

async function select(p: Page, key: string): Promise<void> {
  await p.getByRole("button", { name: "Sessions", exact: true }).click();
  await row(p, key).click();
  await expect.poll(() => p.locator(".facts code").first().textContent()).toBe(key);
}

async function outbox(p: Page, status = ""): Promise<void> {
  await p.getByRole("button", { name: "Outbox", exact: true }).click();
  await p.getByLabel("Status", { exact: true }).selectOption(status);
}

describe("operating a gateway from the console in Chromium", () => {
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
    page = await logIn(ADMIN);
  });

  afterAll(async () => {
    await browser?.close();
    await demo?.close();
  });

  it("changes a session's visibility through sessions.patch, and clears it again", async () => {
    await select(page, MAIN);
    await page.getByLabel("Visibility", { exact: true }).selectOption("self");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await expect.poll(() => page.locator(".settings [role=status]").textContent()).toBe("Saved.");
    await expect.poll(async () => (await entry(MAIN))?.visibility).toBe("self");
    await page.getByLabel("Visibility", { exact: true }).selectOption("inherit");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await expect.poll(async () => (await entry(MAIN))?.visibility).toBeUndefined();
    // The queue mode is set the same way, and shown again when the session is opened.
    await page.getByLabel("Queue mode", { exact: true }).selectOption("collect");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await expect.poll(async () => (await entry(MAIN))?.queueMode).toBe("collect");
    await page.getByLabel("Queue mode", { exact: true }).selectOption("inherit");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await expect.poll(async () => (await entry(MAIN))?.queueMode).toBeUndefined();
  });

  it("denies sends for a session: a sessions_send to it is refused at delivery, a delivering send at once", async () => {
    await select(page, OPS);
    await page.getByLabel("Send policy", { exact: true }).selectOption("deny");
    await page.getByRole("button", { name: "Save", exact: true }).click();
    await expect.poll(() => page.locator(".settings [role=status]").textContent()).toBe("Saved.");
    await expect.poll(() => row(page, OPS).textContent()).toContain("sends denied");
    expect((await entry(OPS))?.sendPolicy).toBe("deny");

    // The operator asks for a delivered reply in the denied room: refused by the gateway.
    await page.getByLabel("Message as operator", { exact: true }).fill("anyone here?");
    await page.getByLabel("Deliver the reply to the session's channel", { exact: true }).check();
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await expect
      .poll(() => page.locator(".composer [role=alert]").textContent())
      .toContain("Send policy denies");

    // Main's agent calls sessions_send to the room: the run happens, its announce is suppressed by the override.
    const posted = demo.posted.length;
    await select(page, MAIN);
    await page.getByLabel("Message as operator", { exact: true }).fill("tell ops the deploy moved to 15:00");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await demo.idle();
    await outbox(page, "suppressed");
    const card = page.locator(`li.card[data-status="suppressed"]`).filter({ hasText: OPS });
    await card.first().waitFor();
    await expect(card.first().locator(".reason").textContent()).resolves.toMatch(
      /override.*deny|deny.*override/i,
    );
    await expect(card.first().textContent()).resolves.toContain("Deploy v2");
    expect(demo.posted.slice(posted).filter((p) => p.to === "#ops")).toEqual([]);
    await page.screenshot({ path: screenshotPath("console-outbox.png") });
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
    expect(await demo.gateway.store.listRunsByStatus(["running", "queued"])).toEqual([]);
    // And from the Runs view: another slow run, aborted there.
    await demo.gateway.call("chat.send", {
      sessionKey: MAIN,
      message: "slow again",
      idempotencyKey: "slow-2",
    });
    const card = page.getByRole("list", { name: "Runs under way" }).locator("li.card");
    await card.waitFor();
    await card.getByRole("button", { name: "Abort run", exact: true }).click();
    await expect.poll(() => page.locator(".tag.state-aborted").count()).toBe(2);
    await expect(
      (await demo.gateway.call("agent.wait", { runId: "slow-2", timeoutMs: 60_000 })) as object,
    ).toMatchObject({
      status: "error",
    });
  });

  it("lists and aborts a run that started before the console opened", async () => {
    await demo.gateway.call("chat.send", {
      sessionKey: MAIN,
      message: "slow, before anyone looked",
      idempotencyKey: "slow-before",
    });
    await expect
      .poll(async () => (await demo.gateway.runs.list({ sessionKey: MAIN })).runs.map((r) => r.status))
      .toEqual(["running"]);
    // A console opened now never heard the run start: it finds it with runs.list.
    const late = await logIn(ADMIN);
    await late.getByRole("button", { name: "Runs", exact: true }).click();
    const card = late
      .getByRole("list", { name: "Runs under way" })
      .locator(`li.card[data-run="slow-before"]`);
    await card.waitFor();
    await expect(card.textContent()).resolves.toContain(MAIN);
    await card.getByRole("button", { name: "Abort run", exact: true }).click();
    await expect(
      (await demo.gateway.call("agent.wait", { runId: "slow-before", timeoutMs: 60_000 })) as object,
    ).toMatchObject({ status: "error" });
    await card.waitFor({ state: "detached" });
    await expect.poll(() => late.locator(".tag.state-aborted").count()).toBe(1);
    await late.close();
  });

  it("shows the outbox live: pending, retrying, delivered, failed, and a retry that delivers", async () => {
    await outbox(page);
    const held = page.locator("li.card").filter({ hasText: "#held" });
    const tag = (card: typeof held) => card.locator(".tag").first().textContent();

    // A reply whose delivery waits on the platform: pending, then delivered when the platform answers.
    await demo.gateway.receive(demoRoom("held", "first"));
    // (New and retrying deliveries reach an open outbox within a second; ended ones at once, by event.)
    await expect.poll(() => tag(held)).toBe("pending");
    await expect(held.textContent()).resolves.toContain("attempts 0");
    demo.held.gate.release();
    await expect.poll(() => tag(held)).toBe("delivered");
    await expect(held.textContent()).resolves.toContain("attempts 1");

    // One that fails once, then waits: retrying, with the attempt count and the error, then delivered.
    demo.held.fails = 1;
    await demo.gateway.receive(demoRoom("held", "second"));
    const second = page.locator("li.card").filter({ hasText: "You said: second" });
    await expect.poll(() => tag(second)).toBe("retrying");
    await expect(second.textContent()).resolves.toMatch(/attempts 1 · next at/);
    await expect(second.locator(".reason").textContent()).resolves.toBe("the #held room is busy");
    demo.held.gate.release();
    await expect.poll(() => tag(second)).toBe("delivered");

    // The seed's #flaky delivery failed for good; Retry queues it again and it goes out.
    const flaky = page.locator("li.card").filter({ hasText: "#flaky" });
    await expect.poll(() => flaky.getAttribute("data-status")).toBe("failed");
    await expect(flaky.locator(".reason").textContent()).resolves.toBe("the #flaky room is unreachable");
    demo.flaky.down = false;
    await flaky.getByRole("button", { name: "Retry", exact: true }).click();
    await expect.poll(() => flaky.getAttribute("data-status")).toBe("delivered");
    expect(demo.posted.filter((p) => p.to === "#flaky")).toHaveLength(1);

    // The status filter shows one kind at a time.
    await outbox(page, "failed");
    await expect.poll(() => page.locator("li.card").count()).toBe(0);
    await outbox(page, "delivered");
    await expect.poll(async () => (await page.locator("li.card").count()) > 2).toBe(true);
    await expect(page.locator("li.card:not([data-status=delivered])").count()).resolves.toBe(0);
    expect(demo.posted.filter((p) => p.to === "#held").map((p) => p.text)).toEqual([
      "Ops bot here. You said: first",
      "Ops bot here. You said: second",
    ]);
  });

  it("lists thread bindings and opens the bound session", async () => {
    await page.getByRole("button", { name: "Bindings", exact: true }).click();
    const rows = page.locator(".grid tbody tr");
    await expect.poll(() => rows.count()).toBe(1);
    const cells = await rows.first().locator("td").allTextContents();
    expect(cells[0]).toBe("console:@alice › thread 1");
    expect(cells[1]).toMatch(/^agent:research:subagent:/);
    expect(cells[2]).toMatch(/ago|now/);
    // Bindings expire after a day idle (the default): a date, not "never".
    expect(cells[3]).not.toBe("never");
    await rows.first().getByRole("button").click();
    await expect.poll(() => page.locator("#detail-title").textContent()).toBe("watcher");
    await expect(page.locator(".facts").textContent()).resolves.toContain("console → @alice (thread 1)");
  });

  it("shows the tree of any run, and keeps it live while it grows", async () => {
    // The story's sessions_send to #ops: Alice's message → main's run → the run in #ops → reply-back, announce.
    const send = (await demo.gateway.store.listRunsByStatus(["ok"])).find(
      (run) => run.kind === "inter_session" && run.sessionKey === OPS,
    );
    expect(send?.rootRunId).toBeDefined();
    await page.getByRole("button", { name: "Runs", exact: true }).click();
    await page.getByLabel("Run id", { exact: true }).fill(send?.runId as string);
    await page.getByRole("button", { name: "Show tree", exact: true }).click();
    const tree = page.getByRole("list", { name: "Run tree" });
    const root = tree.locator(`:scope > li[data-run="${send?.rootRunId}"]`);
    await root.waitFor();
    const sent = root.locator(`li[data-run="${send?.runId}"]`);
    await expect
      .poll(() =>
        sent
          .locator(":scope > ul:not(.deliveries) > li")
          .evaluateAll((els) => els.map((el) => el.getAttribute("data-kind"))),
      )
      .toEqual(["ping_pong", "announce"]);
    await expect(
      sent.getByRole("list", { name: `Deliveries of ${send?.runId}` }).textContent(),
    ).resolves.toMatch(/announce\s*delivered to console #ops/);
    const caused = (await demo.gateway.runs.tree({ runId: send?.runId as string })).runs.length - 1;
    await expect(root.locator(":scope > div .subtree-usage").textContent()).resolves.toContain(
      `with the ${caused} runs it caused`,
    );

    // A run that waits (the agent streams half its reply, then holds): its tree shows it running, then ending and
    // delivering, without a reload.
    const received = await demo.gateway.receive(demoAlice("stream please"));
    await page.getByLabel("Run id", { exact: true }).fill(received.runId as string);
    await page.getByRole("button", { name: "Show tree", exact: true }).click();
    const live = tree.locator(`li[data-run="${received.runId}"]`);
    await expect.poll(() => live.locator(".tag").nth(1).textContent()).toBe("running");
    demo.stream.release();
    await expect.poll(() => live.locator(".tag").nth(1).textContent()).toBe("ok");
    await expect.poll(() => live.locator("li[data-delivery]").textContent()).toMatch(/reply\s*delivered/);

    // A run whose third send to #ops the loop guard refused: the refusal is listed under it.
    const nag = await demo.gateway.receive(demoAlice("nag ops are you there?"));
    await expect
      .poll(
        async () => (await demo.gateway.agentWait({ runId: nag.runId as string, timeoutMs: 60_000 })).reply,
      )
      .toBe("Sent: accepted, accepted, loop");
    await page.getByLabel("Run id", { exact: true }).fill(nag.runId as string);
    await page.getByRole("button", { name: "Show tree", exact: true }).click();
    const refused = tree.getByRole("list", { name: `Refused calls of ${nag.runId}` });
    await expect.poll(() => refused.textContent()).toMatch(/loop\s*sessions_send refused \(limit 2\)/);
    await expect(refused.textContent()).resolves.toContain(`${MAIN} → ${OPS}`);

    // A request with a budget: its tree says what it spent and what is left.
    const budgeted = await demo.gateway.agent({
      sessionKey: MAIN,
      message: "hello",
      idempotencyKey: "budgeted-hello",
      budget: { runs: 9 },
    });
    await demo.gateway.agentWait({ runId: budgeted.runId, timeoutMs: 60_000 });
    await page.getByLabel("Run id", { exact: true }).fill(budgeted.runId);
    await page.getByRole("button", { name: "Show tree", exact: true }).click();
    await expect
      .poll(async () => {
        const spent = (await demo.gateway.runs.tree({ runId: budgeted.runId })).runs.length;
        const shown = await page.locator(".run-tree .budget").textContent();
        return shown === `Budget: runs ${spent} of 9 (${9 - spent} left)`;
      })
      .toBe(true);
    await page.getByRole("button", { name: "Close", exact: true }).click();
    await tree.waitFor({ state: "detached" });
  });

  it("a read-only token sees everything and can change nothing", async () => {
    const reader = await logIn(READER);
    await reader.locator(".tag.readonly").waitFor();
    await select(reader, OPS);
    await expect(reader.getByRole("button", { name: "Save", exact: true }).isDisabled()).resolves.toBe(true);
    await expect(reader.getByLabel("Send policy", { exact: true }).isDisabled()).resolves.toBe(true);
    await expect(reader.getByLabel("Visibility", { exact: true }).isDisabled()).resolves.toBe(true);
    await expect(reader.getByLabel("Label", { exact: true }).isDisabled()).resolves.toBe(true);
    await expect(reader.getByLabel("Message as operator", { exact: true }).count()).resolves.toBe(0);
    await expect.poll(() => reader.getByRole("list", { name: "Transcript" }).textContent()).toContain("v2");
    // No Retry in the outbox (where a suppressed announce waits), no Abort for a run under way.
    await outbox(reader, "suppressed");
    await reader.locator("li.card").first().waitFor();
    await expect(reader.getByRole("button", { name: "Retry" }).count()).resolves.toBe(0);
    await demo.gateway.call("chat.send", {
      sessionKey: MAIN,
      message: "slow for the reader",
      idempotencyKey: "slow-r",
    });
    await reader.getByRole("button", { name: "Runs", exact: true }).click();
    await reader.getByRole("list", { name: "Runs under way" }).locator("li.card").waitFor();
    await expect(reader.getByRole("button", { name: "Abort run" }).count()).resolves.toBe(0);
    await select(reader, MAIN);
    await reader.getByRole("region", { name: "Runs under way" }).waitFor();
    await expect(reader.getByRole("button", { name: "Abort run" }).count()).resolves.toBe(0);
    await demo.gateway.call("chat.abort", { sessionKey: MAIN });
    // The web chat is read-only too.
    await reader.goto(`${demo.url}chat`);
    await reader.getByText("This token can read only: sending is off.").waitFor();
    await expect(reader.getByLabel("Message", { exact: true }).count()).resolves.toBe(0);

    // Even requests made by hand from the page are refused by the gateway.
    const outcomes = await reader.evaluate(async () => {
      const ws = new WebSocket(`ws://${location.host}`);
      const frames: { id?: string; ok?: boolean; error?: { details?: { code?: string } } }[] = [];
      ws.onmessage = (e) => frames.push(JSON.parse(String(e.data)));
      await new Promise((r) => {
        ws.onopen = r;
      });
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
      const client = { id: "probe", version: "0", platform: "browser", mode: "backend" };
      const token = JSON.parse(sessionStorage.getItem("sessions.console.login") ?? "{}").token;
      await call("c", "connect", {
        minProtocol: 4,
        maxProtocol: 4,
        client,
        scopes: ["operator.admin"],
        auth: { token },
      });
      const results = [
        await call("p", "sessions.patch", { key: "agent:ops:console:group:ops", sendPolicy: "allow" }),
        await call("s", "chat.send", {
          sessionKey: "agent:main:main",
          message: "hi",
          idempotencyKey: "ro-1",
        }),
        await call("a", "chat.abort", { sessionKey: "agent:main:main" }),
      ];
      ws.close();
      return results;
    });
    for (const outcome of outcomes) {
      expect(outcome.ok).toBe(false);
      expect(outcome.error?.details?.code).toBe("MISSING_SCOPE");
    }
    expect((await entry(OPS))?.sendPolicy).toBe("deny");
    await reader.close();
  });
});
