/**
 * Colour only on a terminal, and never when NO_COLOR is set to anything (no-color.org).
 * citty, which draws the help screens, decides once, when it is loaded, and only knows
 * NO_COLOR=1: so this module is imported before it and says NO_COLOR=1 whenever colour
 * is not wanted (output to a pipe or a file, NO_COLOR set, TERM=dumb).
 */
const wanted = process.stdout.isTTY === true && !process.env.NO_COLOR && process.env.TERM !== "dumb";
if (!wanted) process.env.NO_COLOR = "1";

export const colourWanted = wanted;
