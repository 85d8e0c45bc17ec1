/**
 * The Redis State's sliding windows in Lua, put before the scripts that count in them
 * (admission, settlement, a Level's errors): see RingWindow in state/memory-windows.ts
 * for the same ring in memory. Scripts that count no window leave it out: Redis runs a
 * script's definitions on every call.
 */
export const SLIDING_WINDOWS = `
-- Sliding windows, as RingWindow in memory-windows.ts: a ring of 61 buckets of
-- windowMs/60 (the 60 of the window and the one it overlaps), a running total, and a
-- bucket counts while its newest event is less than a window old. A window is one
-- string of doubles: ms, head (newest bucket's start), total, first (start of the oldest
-- bucket with an event; -inf when none), then per slot its start, newest event and
-- amount (newest -inf while it has none). A script reads it once (GET), decodes only the
-- slots it visits, and writes it back once (flush_windows) with only the slots it changed
-- packed again. Buckets stop counting in the order they began (each one's newest event is
-- older than the next one's start), so a sum is the total less the oldest slots that no
-- longer count, usually one: a hash of 122 fields read whole, up to three times per
-- window and script, cost an admission of ten windows 0.7 ms of Redis's time.
local SLOTS, SLOT_BYTES, HEADER_BYTES = 61, 24, 32
local WINDOWS, DIRTY = {}, {}
local function width_of(ms) return math.max(1, math.ceil(ms / 60)) end
local function window_of(key, ms)
  local w = WINDOWS[key]
  if w ~= nil and w.ms == ms then return w end
  local raw = false
  if w == nil then raw = redis.call('GET', key) end
  w = { ms = ms, width = width_of(ms), head = -math.huge, total = 0, first = -math.huge, raw = false, slots = {}, changed = {} }
  -- Nothing stored, or another length (a new series, written only once something is added).
  if raw and #raw == HEADER_BYTES + SLOTS * SLOT_BYTES then
    local stored, head, total, first = struct.unpack('<dddd', raw)
    if stored == ms then w.head = head; w.total = total; w.first = first; w.raw = raw end
  end
  WINDOWS[key] = w
  return w
end
-- Slot i (0 to 60) as {start, latest, amount}, decoded once.
local function slot(w, i)
  local s = w.slots[i]
  if s == nil then
    if w.raw then
      local start, latest, amount = struct.unpack('<ddd', w.raw, HEADER_BYTES + 1 + SLOT_BYTES * i)
      s = { start, latest, amount }
    else s = { -math.huge, -math.huge, 0 } end
    w.slots[i] = s
  end
  return s
end
-- The k-th oldest slot of the ring (k from 0), and where the bucket starting at b is in it.
local function ring_slot(w, k) return slot(w, (math.floor(w.head / w.width) - 60 + k) % SLOTS) end
local function ring_index(w, b) return math.floor((b - w.head) / w.width + 0.5) + 60 end
local function counts(w, s, now, later) return (later or s[1] <= now) and s[2] > now - w.ms end
-- later: also buckets that began after now (an admission whose clock reading is older
-- than another's already counted must still see it).
local function window_sum(key, ms, now, later)
  local w = window_of(key, ms)
  if w.head == -math.huge then return 0 end
  -- Only buckets that began a window ago or more can have stopped counting: the walk
  -- ends at the first that began later or still counts.
  local horizon, total, k = now - ms, w.total, 0
  while k < SLOTS do
    local s = ring_slot(w, k)
    if s[1] > horizon or s[2] > horizon then break end
    total = total - s[3]
    k = k + 1
  end
  if not later then
    -- Buckets begin in ring order too: those after now are the newest.
    local j = SLOTS - 1
    while j >= k do
      local s = ring_slot(w, j)
      if s[1] <= now then break end
      total = total - s[3]
      j = j - 1
    end
  end
  return total
end
-- The buckets that count, oldest (so newest event) first, from the oldest with an event.
local function each_live(w, now, later, visit)
  if w.first == -math.huge then return end
  for k = math.max(0, ring_index(w, w.first)), SLOTS - 1 do
    local s = ring_slot(w, k)
    if counts(w, s, now, later) and visit(s) then return end
  end
end
local function window_retry(key, ms, now, limit, later)
  local total = window_sum(key, ms, now, later)
  if total < limit then return 0 end
  local wait = ms
  each_live(window_of(key, ms), now, later, function(s)
    total = total - s[3]
    if total < limit then wait = math.max(0, s[2] + ms - now); return true end
  end)
  return wait
end
-- Until the oldest amount counting at now slides out (0 when none counts).
local function window_reset(key, ms, now)
  local reset = 0
  each_live(window_of(key, ms), now, true, function(s)
    if s[3] ~= 0 then reset = math.max(0, s[2] + ms - now); return true end
  end)
  return reset
end
local function change(w, i)
  local s = slot(w, i)
  w.changed[i] = true
  return s
end
local function window_add(key, ms, amount, at)
  local w = window_of(key, ms)
  local width = w.width
  local start = math.floor(at / width) * width
  if start > w.head then
    -- The head moves on: the slots it passes start empty buckets.
    local steps = SLOTS
    if w.head ~= -math.huge then steps = math.min(SLOTS, math.floor((start - w.head) / width + 0.5)) end
    for k = 0, steps - 1 do
      local b = start - k * width
      local s = change(w, math.floor(b / width) % SLOTS)
      w.total = w.total - s[3]
      s[1] = b; s[2] = -math.huge; s[3] = 0
    end
    w.head = start
    w.moved = true
    -- The oldest bucket with an event left the ring: the next one is the first.
    if w.first ~= -math.huge and ring_index(w, w.first) < 0 then
      w.first = -math.huge
      for k = 0, SLOTS - 1 do
        local s = ring_slot(w, k)
        if s[2] ~= -math.huge then w.first = s[1]; break end
      end
    end
  end
  DIRTY[key] = true
  local i = math.floor(at / width) % SLOTS
  -- Older than the ring (a clock step back, a reservation made over a window ago): it could not count any more.
  if slot(w, i)[1] ~= start then return end
  local s = change(w, i)
  s[3] = s[3] + amount
  w.total = w.total + amount
  if amount > 0 and at > s[2] then
    s[2] = at
    if w.first == -math.huge or start < w.first then w.first = start end
  end
end
-- Writes the windows this script changed. A stored window gets its header and each run of
-- changed slots in place (SETRANGE: a call or two, where packing and storing the whole
-- string again cost 6 µs a window); a new one is written whole. Its lifetime is set when
-- its head moves: the newest event is then at most a bucket younger than the head, so two
-- windows and a second from there outlive it by more than a window. Every script that adds
-- to a window calls this before it answers.
local function flush_windows()
  for key, _ in pairs(DIRTY) do
    local w = WINDOWS[key]
    local header = struct.pack('<dddd', w.ms, w.head, w.total, w.first)
    if w.raw then
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
          parts[#parts + 1] = struct.pack('<ddd', s[1], s[2], s[3])
          k = k + 1
        until k > #changed or changed[k] ~= changed[k - 1] + 1
        redis.call('SETRANGE', key, HEADER_BYTES + SLOT_BYTES * first, table.concat(parts))
      end
      if w.moved then redis.call('PEXPIRE', key, 2 * w.ms + 1000) end
    else
      local parts = { header }
      for i = 0, SLOTS - 1 do
        local s = slot(w, i)
        parts[#parts + 1] = struct.pack('<ddd', s[1], s[2], s[3])
      end
      redis.call('SET', key, table.concat(parts), 'PX', 2 * w.ms + 1000)
    end
  end
  DIRTY = {}
end
`;
