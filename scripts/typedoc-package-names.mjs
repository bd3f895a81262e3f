// TypeDoc plugin: names each entry point's module after the import a user writes (`@sessions/core`,
// `@sessions/gateway/ai-sdk`) instead of its source path (`core/src`, `gateway/src/ai-sdk`).
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { Converter, ReflectionKind } from "typedoc";

/** @param {import("typedoc").Application} app */
export function load(app) {
  app.converter.on(Converter.EVENT_CREATE_DECLARATION, (_context, reflection) => {
    if (!reflection.kindOf(ReflectionKind.Module)) return;
    const match = /^([\w.-]+)\/src(?:\/(.+))?$/.exec(reflection.name);
    if (!match) return;
    const [, folder, file] = match;
    try {
      const { name } = JSON.parse(readFileSync(join("packages", folder ?? "", "package.json"), "utf8"));
      reflection.name = file && file !== "index" ? `${name}/${file}` : name;
    } catch {
      // not a workspace package: keep TypeDoc's name
    }
  });
}
