/** The format's name in refusals ("… which speaks OpenAI Chat Completions"). */
export const CHAT = "OpenAI Chat Completions";
