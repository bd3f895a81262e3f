import { afterEach, describe, expect, it } from "vitest";
import { serve, stopServed } from "./test-kit.js";

afterEach(stopServed);

describe("serve and the console", () => {
  it("serves the console at / and prints its address; --no-console turns it off", async () => {
    const on = await serve([]);
    const page = await fetch(on.http);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain("<title>sessions console</title>");
    expect((await fetch(`${on.http}chat`)).status).toBe(200);
    expect(on.log()).toContain(`\nconsole ${on.http}\n`);

    const off = await serve(["--no-console"]);
    expect((await fetch(off.http)).status).toBe(426);
    expect(off.log()).not.toContain("console");
  });
});
