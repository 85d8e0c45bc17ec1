import type { WindowCounter } from "../state.ts";

/** A window's lane in its string (1, or 2 for the second of a pair: `WindowLane`). */
export const laneOf = (counter: WindowCounter): number => (counter.lane?.index ?? 0) + 1;

/**
 * The Redis State's sliding windows in Lua, put before the scripts that count in them
 * (admission, settlement, a Level's errors): see RingWindow in state/memory-windows.ts
 * for the same ring in memory. Scripts that count no window leave it out: Redis runs a
 * script's definitions on every call.
 */
export const SLIDING_WINDOWS = `
-- Sliding windows, as RingWindow in memory-windows.ts: a ring of 61 buckets of
-- windowMs/60 (the 60 of the window and the one it overlaps), a running total, and a
-- bucket counts while its newest event is less than a window old. One string holds two
-- windows of the same length (lanes 1 and 2: a subject's calls and its tokens, see
-- WindowLane in state.ts) on one ring of buckets, each lane with its own amounts, newest
-- events and total: one read and one write serve both, where a string each cost an
-- admission 8 us of Redis's time per window. A window alone uses lane 1. The string is
-- doubles: ms, head (newest bucket's start), total 1, total 2, first 1, first 2 (start of
-- a lane's oldest bucket with an event; -inf when none), then per slot its start and per
-- lane its newest event and amount (newest -inf while it has none). A script reads the
-- header and the slots it visits (GETRANGE: a GET costs Lua about 1 ns a byte, 2.7 us for
-- the whole string), the whole string only for a walk past them, and writes back the
-- header and the slots it changed (flush_windows). A lane's buckets stop counting in the
-- order they began (each one's newest event is older than the next one's start), so a
-- sum is the total less the oldest slots that no longer count, usually one.
local SLOTS, SLOT_BYTES, HEADER_BYTES = 61, 40, 48
local NONE = -math.huge
local WINDOWS, DIRTY = {}, {}
local function width_of(ms) return math.max(1, math.ceil(ms / 60)) end
local function decode_slot(bytes, at) local s = { struct.unpack('<ddddd', bytes, at) }; s[6] = nil; return s end
-- Slots i to i + n - 1 (no wrap) read with one GETRANGE, those not decoded yet.
local function load_run(w, i, n)
  if not w.stored or w.raw then return end
  local from = HEADER_BYTES + SLOT_BYTES * i
  local bytes = redis.call('GETRANGE', w.key, from, from + SLOT_BYTES * n - 1)
  for j = 0, n - 1 do
    if w.slots[i + j] == nil and #bytes >= SLOT_BYTES * (j + 1) then w.slots[i + j] = decode_slot(bytes, 1 + SLOT_BYTES * j) end
  end
end
-- The whole string, for a walk past the slots read so far (an idle window).
local function load_all(w)
  if w.stored and not w.raw then w.raw = redis.call('GET', w.key) or '' end
end
local function window_of(key, ms)
  local w = WINDOWS[key]
  if w ~= nil and w.ms == ms then return w end
  local fresh = w == nil
  w = { key = key, ms = ms, width = width_of(ms), head = NONE, total = { 0, 0 }, first = { NONE, NONE }, stored = false, raw = false, slots = {}, changed = {} }
  WINDOWS[key] = w
  -- Nothing stored, or another length: a new series, written only once something is added.
  if not fresh then return w end
  local header = redis.call('GETRANGE', key, 0, HEADER_BYTES - 1)
  if #header < HEADER_BYTES then return w end
  local stored, head, total1, total2, first1, first2 = struct.unpack('<dddddd', header)
  if stored ~= ms then return w end
  w.head = head; w.total = { total1, total2 }; w.first = { first1, first2 }; w.stored = true
  -- Read first what an admission visits: the newest slot and the two oldest after it.
  local h = math.floor(head / w.width) % SLOTS
  if h + 2 < SLOTS then load_run(w, h, 3) else load_run(w, h, SLOTS - h); load_run(w, 0, h + 3 - SLOTS) end
  return w
end
-- Slot i (0 to 60) as {start, newest 1, amount 1, newest 2, amount 2}, decoded once:
-- lane L's newest event is s[2 * L], its amount s[2 * L + 1].
local function slot(w, i)
  local s = w.slots[i]
  if s == nil then
    if w.stored and not w.raw then load_run(w, i, 1); s = w.slots[i] end
    if s == nil and w.raw and #w.raw >= HEADER_BYTES + SLOT_BYTES * (i + 1) then s = decode_slot(w.raw, HEADER_BYTES + 1 + SLOT_BYTES * i) end
    if s == nil then s = { NONE, NONE, 0, NONE, 0 } end
    w.slots[i] = s
  end
  return s
end
-- The k-th oldest slot of the ring (k from 0), and where the bucket starting at b is in it.
local function ring_slot(w, k) return slot(w, (math.floor(w.head / w.width) - 60 + k) % SLOTS) end
local function ring_index(w, b) return math.floor((b - w.head) / w.width + 0.5) + 60 end
-- later: also buckets that began after now (an admission whose clock reading is older
-- than another's already counted must still see it).
local function window_sum(key, ms, now, later, lane)
  local w = window_of(key, ms)
  if w.head == NONE then return 0 end
  local newest, amount = 2 * lane, 2 * lane + 1
  -- Only buckets that began a window ago or more can have stopped counting: the walk
  -- ends at the first that began later or still counts.
  local horizon, total, k = now - ms, w.total[lane], 0
  while k < SLOTS do
    if k == 2 then load_all(w) end
    local s = ring_slot(w, k)
    if s[1] > horizon or s[newest] > horizon then break end
    total = total - s[amount]
    k = k + 1
  end
  if not later then
    -- Buckets begin in ring order too: those after now are the newest.
    local j = SLOTS - 1
    while j >= k do
      if j == SLOTS - 2 then load_all(w) end
      local s = ring_slot(w, j)
      if s[1] <= now then break end
      total = total - s[amount]
      j = j - 1
    end
  end
  return total
end
-- A lane's buckets that count, oldest (so newest event) first, from its oldest with an
-- event: visit(newest event, amount) ends the walk by answering true.
local function each_live(w, now, later, lane, visit)
  local first = w.first[lane]
  if first == NONE then return end
  local newest, amount = 2 * lane, 2 * lane + 1
  local from = math.max(0, ring_index(w, first))
  for k = from, SLOTS - 1 do
    if k > from and k >= 2 then load_all(w) end
    local s = ring_slot(w, k)
    if (later or s[1] <= now) and s[newest] > now - w.ms and visit(s[newest], s[amount]) then return end
  end
end
local function window_retry(key, ms, now, limit, later, lane)
  local total = window_sum(key, ms, now, later, lane)
  if total < limit then return 0 end
  local wait = ms
  each_live(window_of(key, ms), now, later, lane, function(newest, amount)
    total = total - amount
    if total < limit then wait = math.max(0, newest + ms - now); return true end
  end)
  return wait
end
-- Until the oldest amount counting at now slides out (0 when none counts).
local function window_reset(key, ms, now, lane)
  local reset = 0
  each_live(window_of(key, ms), now, true, lane, function(newest, amount)
    if amount ~= 0 then reset = math.max(0, newest + ms - now); return true end
  end)
  return reset
end
local function change(w, i)
  local s = slot(w, i)
  w.changed[i] = true
  return s
end
-- A lane's oldest bucket with an event, once the one it had left the ring.
local function refind_first(w, lane)
  local first = w.first[lane]
  if first == NONE or ring_index(w, first) >= 0 then return end
  w.first[lane] = NONE
  load_all(w)
  for k = 0, SLOTS - 1 do
    local s = ring_slot(w, k)
    if s[2 * lane] ~= NONE then w.first[lane] = s[1]; return end
  end
end
local function window_add(key, ms, amount, at, lane)
  local w = window_of(key, ms)
  local width = w.width
  local start = math.floor(at / width) * width
  if start > w.head then
    -- The head moves on: the slots it passes start empty buckets.
    local steps = SLOTS
    if w.head ~= NONE then steps = math.min(SLOTS, math.floor((start - w.head) / width + 0.5)) end
    -- Past the slots read first: the slots passed are read together.
    if steps > 2 then load_all(w) end
    local total = w.total
    for k = 0, steps - 1 do
      local b = start - k * width
      local s = change(w, math.floor(b / width) % SLOTS)
      total[1] = total[1] - s[3]; total[2] = total[2] - s[5]
      s[1] = b; s[2] = NONE; s[3] = 0; s[4] = NONE; s[5] = 0
    end
    w.head = start
    w.moved = true
    refind_first(w, 1)
    refind_first(w, 2)
  end
  DIRTY[key] = true
  local i = math.floor(at / width) % SLOTS
  -- Older than the ring (a clock step back, a reservation made over a window ago): it could not count any more.
  if slot(w, i)[1] ~= start then return end
  local s = change(w, i)
  local newest = 2 * lane
  s[newest + 1] = s[newest + 1] + amount
  w.total[lane] = w.total[lane] + amount
  if amount > 0 and at > s[newest] then
    s[newest] = at
    if w.first[lane] == NONE or start < w.first[lane] then w.first[lane] = start end
  end
end
-- Empties one lane of a window (the other keeps counting).
local function window_clear(key, ms, lane)
  local w = window_of(key, ms)
  if w.head == NONE then return end
  load_all(w)
  for i = 0, SLOTS - 1 do
    local s = slot(w, i)
    if s[2 * lane] ~= NONE or s[2 * lane + 1] ~= 0 then
      change(w, i)
      s[2 * lane] = NONE; s[2 * lane + 1] = 0
    end
  end
  w.total[lane] = 0
  w.first[lane] = NONE
  DIRTY[key] = true
end
-- Writes the windows this script changed. A stored window gets its header and each run of
-- changed slots in place (SETRANGE: a call or two, where packing and storing the whole
-- string again cost 6 us a window); a new one is written whole. Its lifetime is set when
-- its head moves: the newest event is then at most a bucket younger than the head, so two
-- windows and a second from there outlive it by more than a window. Every script that adds
-- to a window calls this before it answers.
local function flush_windows()
  for key, _ in pairs(DIRTY) do
    local w = WINDOWS[key]
    local header = struct.pack('<dddddd', w.ms, w.head, w.total[1], w.total[2], w.first[1], w.first[2])
    if w.stored then
      redis.call('SETRANGE', key, 0, header)
      local changed = {}
      for i, _ in pairs(w.changed) do changed[#changed + 1] = i end
      table.sort(changed)
      local k = 1
      while k <= #changed do
        -- A run of adjacent slots goes in one SETRANGE.
        local first, parts = changed[k], {}
        repeat
          local s = w.slots[changed[k]]
          parts[#parts + 1] = struct.pack('<ddddd', s[1], s[2], s[3], s[4], s[5])
          k = k + 1
        until k > #changed or changed[k] ~= changed[k - 1] + 1
        redis.call('SETRANGE', key, HEADER_BYTES + SLOT_BYTES * first, table.concat(parts))
      end
      if w.moved then redis.call('PEXPIRE', key, 2 * w.ms + 1000) end
    else
      local parts = { header }
      for i = 0, SLOTS - 1 do
        local s = slot(w, i)
        parts[#parts + 1] = struct.pack('<ddddd', s[1], s[2], s[3], s[4], s[5])
      end
      redis.call('SET', key, table.concat(parts), 'PX', 2 * w.ms + 1000)
    end
  end
  DIRTY = {}
end
`;
