import { useState } from "preact/hooks";
import { maskedKey, storedKey } from "../lib/session.ts";

type Family = "openai" | "anthropic" | "gemini";

/** Snippets with this router's address; the key is shown masked and read from ROUTER_API_KEY in the code. */
function snippets(origin: string): Record<Family, { title: string; blocks: Array<[string, string]> }> {
  return {
    openai: {
      title: "OpenAI SDK",
      blocks: [
        ["Python", `from openai import OpenAI\nimport os\n\nclient = OpenAI(base_url="${origin}/v1", api_key=os.environ["ROUTER_API_KEY"])\nreply = client.chat.completions.create(\n    model="gpt-4o-mini",\n    messages=[{"role": "user", "content": "Hello"}],\n)\nprint(reply.choices[0].message.content)`],
        ["TypeScript", `import OpenAI from "openai";\n\nconst client = new OpenAI({ baseURL: "${origin}/v1", apiKey: process.env.ROUTER_API_KEY });\nconst reply = await client.chat.completions.create({\n  model: "gpt-4o-mini",\n  messages: [{ role: "user", content: "Hello" }],\n});`],
        ["curl", `curl ${origin}/v1/chat/completions \\\n  -H "Authorization: Bearer $ROUTER_API_KEY" \\\n  -H "Content-Type: application/json" \\\n  -d '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Hello"}]}'`],
      ],
    },
    anthropic: {
      title: "Anthropic SDK",
      blocks: [
        ["Python", `import anthropic, os\n\nclient = anthropic.Anthropic(base_url="${origin}", api_key=os.environ["ROUTER_API_KEY"])\nmessage = client.messages.create(\n    model="claude-sonnet-4-5", max_tokens=512,\n    messages=[{"role": "user", "content": "Hello"}],\n)`],
        ["TypeScript", `import Anthropic from "@anthropic-ai/sdk";\n\nconst client = new Anthropic({ baseURL: "${origin}", apiKey: process.env.ROUTER_API_KEY });\nconst message = await client.messages.create({\n  model: "claude-sonnet-4-5", max_tokens: 512,\n  messages: [{ role: "user", content: "Hello" }],\n});`],
      ],
    },
    gemini: {
      title: "Google Gen AI SDK",
      blocks: [
        ["Python", `from google import genai\nfrom google.genai import types\nimport os\n\nclient = genai.Client(api_key=os.environ["ROUTER_API_KEY"],\n                      http_options=types.HttpOptions(base_url="${origin}"))\nreply = client.models.generate_content(model="gemini-2.5-flash", contents="Hello")`],
        ["TypeScript", `import { GoogleGenAI } from "@google/genai";\n\nconst ai = new GoogleGenAI({ apiKey: process.env.ROUTER_API_KEY, httpOptions: { baseUrl: "${origin}" } });\nconst reply = await ai.models.generateContent({ model: "gemini-2.5-flash", contents: "Hello" });`],
      ],
    },
  };
}

export function QuickStart() {
  const [family, setFamily] = useState<Family>("openai");
  const [copied, setCopied] = useState<string | null>(null);
  const origin = location.origin;
  const masked = maskedKey(storedKey());
  const all = snippets(origin);
  const copy = async (label: string, text: string) => {
    try {
      await navigator.clipboard.writeText(text);
      setCopied(`${label} snippet copied.`);
    } catch {
      setCopied("The browser refused the clipboard; select the text instead.");
    }
  };
  return (
    <div>
      <p>
        Point your SDK at <code class="mono">{origin}</code> and use your key <code class="mono">{masked}</code>. The snippets read it from the
        environment: <code class="mono">export ROUTER_API_KEY=sk-rt-…</code>
      </p>
      <div class="toolbar" role="group" aria-label="SDK family">
        {(Object.keys(all) as Family[]).map((f) => (
          <button type="button" key={f} class={f === family ? "primary" : undefined} aria-pressed={f === family} onClick={() => setFamily(f)}>
            {all[f].title}
          </button>
        ))}
      </div>
      {all[family].blocks.map(([label, code]) => (
        <section class="card" key={label} aria-label={`${all[family].title}, ${label}`}>
          <div class="toolbar">
            <h3>{label}</h3>
            <button type="button" onClick={() => copy(label, code)}>
              Copy
            </button>
          </div>
          <pre tabIndex={0}>
            <code>{code}</code>
          </pre>
        </section>
      ))}
      {copied && (
        <p class="hint" role="status">
          {copied}
        </p>
      )}
    </div>
  );
}
