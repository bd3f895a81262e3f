import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { controls, focusRingShown, horizontalOverflow, tabTo } from "./a11y.fixture.js";
import { freshPage, launchChromium, screenshotPath } from "./chromium.fixture.js";
import { type DemoGateway, startDemoGateway } from "./demo-gateway.fixture.js";

const ADMIN = "admin-token-for-tests";
const MAIN = "agent:main:main";
const OPS = "agent:ops:console:group:ops";
const PHONE = { width: 375, height: 812 };

let demo: DemoGateway;
let browser: Browser;

const entry = async (key: string) =>
  (await demo.gateway.sessions.list({ limit: 50 })).sessions.find((s) => s.key === key);

/** Every control on the page has an accessible name; returns the named ones. */
async function allNamed(page: Page): Promise<string[]> {
  const { named, unnamed } = await controls(page);
  expect(unnamed).toEqual([]);
  return named;
}

async function logIn(page: Page): Promise<void> {
  await page.goto(demo.url);
  await page.getByLabel("Token", { exact: true }).fill(ADMIN);
  await page.getByLabel("Token", { exact: true }).press("Enter");
  await page.getByRole("status").filter({ hasText: "connected" }).waitFor();
}

describe("the console and web chat for keyboards, screen readers and phones", () => {
  beforeAll(async () => {
    [demo, browser] = await Promise.all([
      startDemoGateway({ tokens: [{ token: ADMIN, label: "admin" }] }),
      launchChromium(),
    ]);
  });

  afterAll(async () => {
    await browser?.close();
    await demo?.close();
  });

  it("names every control on every screen, as the accessibility tree exposes it", async () => {
    const page = await freshPage(browser);
    // The check itself: unlabelled controls are caught.
    await page.setContent('<button></button><input><select><option>a</option></select><a href="#x"></a>');
    await expect(controls(page).then((c) => c.unnamed.length)).resolves.toBe(4);
    await page.goto(demo.url);
    expect(await allNamed(page)).toEqual(
      expect.arrayContaining(['textbox "Token"', 'checkbox "Remember on this device"', 'button "Log in"']),
    );
    await logIn(page);
    await page.locator(`li[data-key="${MAIN}"] > button`).click();
    await page.getByRole("list", { name: "Transcript" }).locator("li").first().waitFor();
    expect(await allNamed(page)).toEqual(
      expect.arrayContaining([
        'searchbox "Search labels and keys"',
        'combobox "Kind"',
        'combobox "Channel"',
        'combobox "Agent"',
        'combobox "Activity"',
        'textbox "Label"',
        'combobox "Send policy"',
        'combobox "Visibility"',
        'button "Save"',
        'textbox "Message as operator"',
        'checkbox "Deliver the reply to the session\'s channel"',
        'button "Send"',
        'button "Outbox"',
        'link "Web chat"',
        'button "Log out"',
      ]),
    );
    for (const tab of ["Runs", "Outbox", "Bindings"]) {
      await page.getByRole("button", { name: tab, exact: true }).click();
      await page.getByRole("heading", { level: 2 }).first().waitFor();
      await allNamed(page);
    }
    await page.goto(`${demo.url}chat`);
    await page.getByLabel("Message", { exact: true }).waitFor();
    expect(await allNamed(page)).toEqual(
      expect.arrayContaining(['textbox "Message"', 'button "Send"', 'link "Console"']),
    );
    await page.close();
  });

  it("works from the keyboard alone: log in, open a session, change its send policy, read a tool call", async () => {
    const page = await freshPage(browser);
    await page.goto(demo.url);
    await tabTo(page, "#login-token");
    await page.keyboard.type(ADMIN);
    await page.keyboard.press("Enter");
    await page.getByRole("status").filter({ hasText: "connected" }).waitFor();

    // Into the tree (once it has loaded): Tab to the ops room's row, Enter opens it.
    await page.locator(`li[data-key="${OPS}"]`).waitFor();
    await tabTo(page, `li[data-key="${OPS}"] > button`);
    expect(await focusRingShown(page)).toBe(true);
    await page.keyboard.press("Enter");
    await expect.poll(() => page.locator(".facts code").first().textContent()).toBe(OPS);

    // Send policy: a select changed with the arrow keys, saved with Space on the button.
    await tabTo(page, "#session-send-policy");
    await page.keyboard.press("End");
    await expect(page.locator("#session-send-policy").inputValue()).resolves.toBe("deny");
    await tabTo(page, ".settings button[type=submit]");
    expect(await focusRingShown(page)).toBe(true);
    await page.keyboard.press("Space");
    await expect.poll(async () => (await entry(OPS))?.sendPolicy).toBe("deny");
    await tabTo(page, "#session-send-policy", { backwards: true });
    await page.keyboard.press("Home");
    await expect(page.locator("#session-send-policy").inputValue()).resolves.toBe("inherit");
    await tabTo(page, ".settings button[type=submit]");
    await page.keyboard.press("Enter");
    await expect.poll(async () => (await entry(OPS))?.sendPolicy).toBeUndefined();

    // A tool call in the transcript unfolds with Enter.
    await page.keyboard.press("Shift+Tab");
    await tabTo(page, `li[data-key="${MAIN}"] > button`, { max: 200 });
    await page.keyboard.press("Enter");
    await expect.poll(() => page.locator(".facts code").first().textContent()).toBe(MAIN);
    await tabTo(page, "details.tool > summary", { max: 200 });
    await page.keyboard.press("Enter");
    await expect(page.locator("details.tool[open]").count()).resolves.toBe(1);

    // Other sections through the navigation.
    await page.keyboard.press("Shift+Tab");
    await tabTo(page, "nav button", { text: "Outbox", max: 200 });
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Outbox" }).waitFor();

    // The web chat: type, Enter sends.
    await page.goto(`${demo.url}chat`);
    await page.getByLabel("Message", { exact: true }).waitFor();
    await tabTo(page, "#chat-message");
    await page.keyboard.type("typed, not clicked");
    await page.keyboard.press("Enter");
    await page.getByText("You said: typed, not clicked").waitFor();
    await page.close();
  });

  it("fits a 375 px phone: one column, nothing scrolls sideways, every section reachable", async () => {
    const page = await freshPage(browser, PHONE);
    await logIn(page);
    expect(await horizontalOverflow(page)).toBe(0);
    await page.locator(`li[data-key="${MAIN}"] > button`).click();
    await page.getByRole("button", { name: "← Sessions", exact: true }).waitFor();
    await expect(page.locator(".tree-pane").isVisible()).resolves.toBe(false);
    await page.getByRole("list", { name: "Transcript" }).locator("li").first().waitFor();
    expect(await horizontalOverflow(page)).toBe(0);
    // Every control of the session screen is on screen horizontally.
    for (const box of await page
      .locator(".detail button, .detail select, .detail input, .detail textarea")
      .all()) {
      const b = await box.boundingBox();
      if (b === null) continue;
      expect(b.x).toBeGreaterThanOrEqual(0);
      expect(b.x + b.width).toBeLessThanOrEqual(PHONE.width);
    }
    await page.screenshot({ path: screenshotPath("console-phone.png") });
    await page.getByRole("button", { name: "← Sessions", exact: true }).click();
    await expect(page.locator(".tree-pane").isVisible()).resolves.toBe(true);
    for (const tab of ["Runs", "Outbox", "Bindings"]) {
      await page.getByRole("button", { name: tab, exact: true }).click();
      await page.getByRole("heading", { level: 2 }).first().waitFor();
      expect(await horizontalOverflow(page), tab).toBe(0);
    }
    await page.goto(`${demo.url}chat`);
    await page.getByLabel("Message", { exact: true }).fill("hello from a phone");
    await page.getByRole("button", { name: "Send", exact: true }).click();
    await page.getByText("You said: hello from a phone").waitFor();
    expect(await horizontalOverflow(page)).toBe(0);
    await page.close();
  });
});
