import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiError } from "../lib/api.ts";
import { formatCredits } from "../lib/format.ts";
import { storedKey } from "../lib/session.ts";
import { ErrorNote, Loading } from "../ui/feedback.tsx";
import { SelectField, TextArea } from "../ui/field.tsx";

interface Turn {
  role: "user" | "assistant";
  content: string;
}

/** What the call's record says it cost (GET /x-requests/{id}). */
interface Cost {
  requestId: string;
  prompt: number;
  completion: number;
  credits: number;
  estimated: boolean;
}

/** The call's record, written with the call's usage row a moment after the answer ends. */
async function recordOf(requestId: string): Promise<Cost | undefined> {
  for (let attempt = 0; attempt < 20; attempt++) {
    try {
      const { data } = await api.get<RequestRecord>(`/x-requests/${encodeURIComponent(requestId)}`);
      return { requestId, prompt: data.tokens.prompt, completion: data.tokens.completion, credits: data.cost, estimated: data.source === "estimated" };
    } catch (error) {
      if (!(error instanceof ApiError) || error.status !== 404) throw error;
      await new Promise((resolve) => setTimeout(resolve, 150));
    }
  }
  return undefined;
}

interface RequestRecord {
  tokens: { prompt: number; completion: number };
  cost: number;
  source: "upstream" | "estimated";
}

/** The text deltas of an OpenAI chat stream, as they arrive. */
async function* deltas(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const event = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      for (const line of event.split("\n")) {
        if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
        const parsed = JSON.parse(line.slice(6)) as { choices?: Array<{ delta?: { content?: string } }>; error?: { message?: string } };
        if (parsed.error) throw new Error(parsed.error.message ?? "The stream ended with an error");
        const text = parsed.choices?.[0]?.delta?.content;
        if (text) yield text;
      }
    }
  }
}

/**
 * Chat with any model the key may use, through the router, streamed; each answer shows
 * its tokens and cost as the call's own record states them.
 */
export function PlaygroundPanel() {
  const [models, setModels] = useState<string[] | undefined>(undefined);
  const [model, setModel] = useState("");
  const [prompt, setPrompt] = useState("");
  const [turns, setTurns] = useState<Turn[]>([]);
  const [costs, setCosts] = useState<Array<Cost | undefined>>([]);
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  // What a screen reader is told: each answer once, whole, when it is complete. The
  // conversation itself is not a live region: it changes with every streamed piece, and
  // a reader would hear fragments ("Hello", "Hello from", …) talking over each other.
  const [announced, setAnnounced] = useState("");
  const answer = useRef("");

  useEffect(() => {
    api
      .get<{ data: Array<{ id: string }> }>("/v1/models")
      .then(({ data }) => {
        const ids = data.data.map((m) => m.id);
        setModels(ids);
        setModel((current) => current || ids[0] || "");
      })
      .catch(setError);
  }, []);

  const send = async (event: Event) => {
    event.preventDefault();
    if (!prompt.trim() || !model || busy) return;
    const history: Turn[] = [...turns, { role: "user", content: prompt.trim() }];
    setTurns([...history, { role: "assistant", content: "" }]);
    setPrompt("");
    setBusy(true);
    setError(null);
    setAnnounced("");
    answer.current = "";
    try {
      const response = await fetch("/v1/chat/completions", {
        method: "POST",
        headers: { authorization: `Bearer ${storedKey()}`, "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify({ model, stream: true, messages: history }),
        credentials: "omit",
      });
      if (!response.ok || !response.body) {
        const body = (await response.json().catch(() => null)) as { error?: { message?: string } } | null;
        throw new ApiError(body?.error?.message ?? `The router answered ${response.status}`, response.status);
      }
      const requestId = response.headers.get("x-request-id") ?? "";
      for await (const text of deltas(response.body)) {
        answer.current += text;
        setTurns([...history, { role: "assistant", content: answer.current }]);
      }
      setAnnounced(`${model} answered: ${answer.current}`);
      const cost = requestId ? await recordOf(requestId) : undefined;
      setCosts((previous) => {
        const next = [...previous];
        next[history.length] = cost;
        return next;
      });
    } catch (e) {
      setError(e);
      setTurns(history);
    } finally {
      setBusy(false);
    }
  };

  if (!models && !error) return <Loading />;
  return (
    <section class="card" aria-labelledby="pg-h">
      <h3 id="pg-h">Chat with a model</h3>
      <p class="hint">Chat with any model this key may use, through the router. Each answer is charged like any call; its tokens and cost come from the call's record.</p>
      <div class="grid">
        <SelectField label="Model" value={model} onChange={setModel} options={(models ?? []).map((id) => [id, id])} />
      </div>
      <ol class="chat" aria-label="Conversation" aria-busy={busy}>
        {turns.map((turn, i) => (
          <li key={i} class={`turn ${turn.role}`}>
            <strong>{turn.role === "user" ? "You" : model}</strong>
            <p>{turn.content || (busy && i === turns.length - 1 ? "…" : "")}</p>
            {turn.role === "assistant" && costs[i] && (
              <p class="hint" data-testid="answer-cost">
                {costs[i]!.prompt} prompt + {costs[i]!.completion} completion tokens · {formatCredits(costs[i]!.credits)}
                {costs[i]!.estimated ? " (estimated)" : ""}
              </p>
            )}
          </li>
        ))}
      </ol>
      <p class="sr-only" aria-live="polite">
        {announced}
      </p>
      <form onSubmit={(e) => void send(e)} noValidate>
        <TextArea label="Message" rows={3} value={prompt} onInput={setPrompt} />
        <ErrorNote error={error} />
        <div class="actions">
          <button type="submit" class="primary" disabled={busy || !prompt.trim() || !model}>
            {busy ? "Answering…" : "Send"}
          </button>
          <button type="button" disabled={busy || turns.length === 0} onClick={() => (setTurns([]), setCosts([]))}>
            New conversation
          </button>
        </div>
      </form>
    </section>
  );
}
