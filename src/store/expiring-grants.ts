/**
 * A balance's expiring grants as both stores aggregate them in the balance's statement
 * (`CreditStore.ledgerBalance`): a JSON array of `[expiresAt, remaining]` pairs, any order.
 */
export function expiringOf(json: string | undefined | null): Array<{ at: number; remaining: number }> {
  const pairs = json ? (JSON.parse(json) as Array<[number | string, number | string]>) : [];
  return pairs.map(([at, remaining]) => ({ at: Number(at), remaining: Number(remaining) })).sort((x, y) => x.at - y.at);
}
