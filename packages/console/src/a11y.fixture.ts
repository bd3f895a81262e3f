import type { Page } from "playwright-core";

/** Roles a person operates: each needs an accessible name (what a screen reader says, what getByRole finds). */
const CONTROLS = new Set([
  "button",
  "link",
  "textbox",
  "searchbox",
  "combobox",
  "listbox",
  "checkbox",
  "radio",
  "switch",
  "slider",
  "spinbutton",
  "tab",
  "menuitem",
  "DisclosureTriangle",
]);

interface AXNode {
  ignored: boolean;
  role?: { value?: unknown } | undefined;
  name?: { value?: unknown } | undefined;
  backendDOMNodeId?: number | undefined;
}

/**
 * Every control on the page as Chromium's accessibility tree exposes it (`Accessibility.getFullAXTree`): the named
 * ones as `role "name"`, and the unnamed ones described by their HTML, so a failure says which element it was.
 */
export async function controls(page: Page): Promise<{ named: string[]; unnamed: string[] }> {
  const cdp = await page.context().newCDPSession(page);
  try {
    const { nodes } = (await cdp.send("Accessibility.getFullAXTree")) as { nodes: AXNode[] };
    const named: string[] = [];
    const unnamed: string[] = [];
    for (const node of nodes) {
      const role = String(node.role?.value ?? "");
      if (node.ignored || !CONTROLS.has(role)) continue;
      const name = String(node.name?.value ?? "").trim();
      if (name) {
        named.push(`${role} "${name}"`);
        continue;
      }
      const { outerHTML } = (await cdp.send("DOM.getOuterHTML", {
        backendNodeId: node.backendDOMNodeId ?? 0,
      })) as { outerHTML: string };
      unnamed.push(`${role}: ${outerHTML.slice(0, 160)}`);
    }
    return { named, unnamed };
  } finally {
    await cdp.detach();
  }
}

/**
 * Presses Tab (Shift+Tab with `backwards`) until the focused element matches `selector` (and has the text `text`,
 * when given); fails after `max` presses. Returns the presses.
 */
export async function tabTo(
  page: Page,
  selector: string,
  options: { text?: string | undefined; max?: number | undefined; backwards?: boolean | undefined } = {},
): Promise<number> {
  const max = options.max ?? 80;
  const key = options.backwards ? "Shift+Tab" : "Tab";
  const focused = () =>
    page.evaluate(
      ([s, text]) => {
        const el = document.activeElement;
        return (el?.matches(s) ?? false) && (text === "" || el?.textContent?.trim() === text);
      },
      [selector, options.text ?? ""] as const,
    );
  for (let presses = 0; presses <= max; presses++) {
    if (await focused()) return presses;
    await page.keyboard.press(key);
  }
  const at = await page.evaluate(() => document.activeElement?.outerHTML.slice(0, 120));
  throw new Error(
    `${key} never reached ${selector} ${options.text ?? ""} in ${max} presses (focus is on ${at})`,
  );
}

/** Whether the focused element shows a focus ring (an outline that is not `none` and has width). */
export function focusRingShown(page: Page): Promise<boolean> {
  return page.evaluate(() => {
    const el = document.activeElement;
    if (!el || el === document.body) return false;
    const style = getComputedStyle(el);
    return style.outlineStyle !== "none" && Number.parseFloat(style.outlineWidth) > 0;
  });
}

/** How far the page scrolls sideways (0 when nothing overflows the viewport). */
export function horizontalOverflow(page: Page): Promise<number> {
  return page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
}
