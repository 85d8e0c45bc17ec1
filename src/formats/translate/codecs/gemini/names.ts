/** Constants the Gemini codec's files share. */
export const NAME = "Gemini generateContent";
