/**
 * A balance's expiring grants as both stores aggregate them in the balance's statement
 * (`CreditStore.ledgerBalance`): a JSON array of `[expiresAt, remaining]` pairs, any order.
 */
export function expiringOf(json: string | undefined | null): Array<{ at: number; remaining: number }> {
  const pairs = json ? (JSON.parse(json) as Array<[number | string, number | string]>) : [];
  return pairs.map(([at, remaining]) => ({ at: Number(at), remaining: Number(remaining) })).sort((x, y) => x.at - y.at);
}

/**
 * Credit given to an account that owes (a debt row: a grant whose remainder is negative)
 * settles the debt first, from the pieces that expire first: "a debt that the next
 * credit settles". Kept apart, the debt came back when that credit expired. Returns the
 * debt rows' new remainders and the pieces left to insert.
 */
export function settleDebts(debts: ReadonlyArray<{ id: number; remaining: number }>, pieces: readonly { amount: number; expiresAt: number | null }[]) {
  const rest = pieces.filter((piece) => piece.amount > 0).map((piece) => ({ ...piece }));
  rest.sort((a, b) => (a.expiresAt ?? Infinity) - (b.expiresAt ?? Infinity));
  const paid: Array<{ id: number; remaining: number }> = [];
  for (const debt of debts) {
    let owed = -debt.remaining;
    for (const piece of rest) {
      if (owed <= 0) break;
      const used = Math.min(piece.amount, owed);
      piece.amount -= used;
      owed -= used;
    }
    if (owed !== -debt.remaining) paid.push({ id: debt.id, remaining: -owed });
  }
  return { paid, rest: rest.filter((piece) => piece.amount > 0) };
}
