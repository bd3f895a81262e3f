import { clock } from "../lib/format.js";
import { authorOf, json, type Part, type ShownMessage } from "../lib/messages.js";

function PartView({ part }: { part: Part }) {
  switch (part.type) {
    case "text":
      return <p class="text">{part.text}</p>;
    case "tool-call":
      return (
        <details class="tool">
          <summary>
            <span class="tag tool-tag">tool call</span> {part.toolName}
          </summary>
          <pre>{json(part.input)}</pre>
        </details>
      );
    case "tool-result":
      return (
        <details class="tool">
          <summary>
            <span class="tag tool-tag">tool result</span> {part.toolName}
          </summary>
          <pre>{json(part.output)}</pre>
        </details>
      );
    default:
      return <pre class="other">{json(part.value)}</pre>;
  }
}

/**
 * One transcript message. Messages another session put here (`provenance.kind: "inter_session"`) are styled and
 * labelled as such, never as the user's.
 */
export function MessageView({ message, detailed = true }: { message: ShownMessage; detailed?: boolean }) {
  const inter = message.provenance?.kind === "inter_session";
  const role = inter ? "inter-session" : message.role;
  const parts = detailed ? message.parts : message.parts.filter((p) => p.type === "text");
  if (parts.length === 0) return null;
  return (
    <li class={`msg role-${role}${message.pending ? " pending" : ""}`} data-role={role}>
      <div class="meta">
        <span class="author">{authorOf(message)}</span>
        {message.ts !== undefined && (
          <time dateTime={new Date(message.ts).toISOString()}>{clock(message.ts)}</time>
        )}
        {message.pending && <span class="muted">sending…</span>}
      </div>
      {parts.map((part, i) => (
        <PartView key={i} part={part} />
      ))}
    </li>
  );
}

/** The reply of a run as it streams in (chat `delta` events). */
export function StreamingView({ text, label = "assistant" }: { text: string; label?: string }) {
  return (
    <li class="msg role-assistant streaming" data-role="streaming" aria-live="polite">
      <div class="meta">
        <span class="author">{label}</span>
        <span class="muted">typing…</span>
      </div>
      <p class="text">{text || "…"}</p>
    </li>
  );
}
