import { shiftDay } from "../lib/format.ts";
import { TextField } from "./field.tsx";

export interface Range {
  start: string;
  end: string;
}

/** The last `days` days ending with `today` (`YYYY-MM-DD`). */
export const lastDays = (today: string, days: number): Range => ({ start: shiftDay(today, -(days - 1)), end: today });

/** Two date inputs plus presets; the router accepts at most 366 days. */
export function DateRange(props: { value: Range; today: string; onChange: (range: Range) => void }) {
  const { value, today } = props;
  const invalid = value.start > value.end ? "The start is after the end" : undefined;
  return (
    <fieldset class="date-range">
      <legend>Date range</legend>
      <TextField label="From" type="date" value={value.start} onInput={(start) => start && props.onChange({ ...value, start })} error={invalid} />
      <TextField label="To" type="date" value={value.end} onInput={(end) => end && props.onChange({ ...value, end })} />
      <div class="presets" role="group" aria-label="Presets">
        <button type="button" onClick={() => props.onChange(lastDays(today, 7))}>
          7 days
        </button>
        <button type="button" onClick={() => props.onChange(lastDays(today, 30))}>
          30 days
        </button>
        <button type="button" onClick={() => props.onChange({ start: `${today.slice(0, 8)}01`, end: today })}>
          This month
        </button>
      </div>
    </fieldset>
  );
}
