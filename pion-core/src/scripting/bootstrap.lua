-- Builds the sandbox a script runs in, once per Lua state. Receives `rt`, a table of
-- raw functions written in Rust (they return ok, value instead of raising), and wraps
-- them so that failures raise as Redis raises them. Afterwards the global table is
-- empty and read-only: reads go through to the libraries, writes are refused.
local rt = ...
local G = _G
local error, type, tostring, pairs, ipairs, select, pcall = error, type, tostring, pairs, ipairs, select, pcall
local setmetatable, rawset, xpcall = setmetatable, rawset, xpcall
local find, byte, concat, loadstring = string.find, string.byte, table.concat, loadstring
local lower = string.lower

local protected = setmetatable({}, {__mode = 'k'})
local function deny() error('Attempt to modify a readonly table', 2) end
local function readonly(real, strict)
  local proxy = {}
  local mt = {__index = real, __newindex = deny, __metatable = false}
  if strict then
    mt.__index = function(_, k)
      local v = real[k]
      if v == nil then
        error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
      end
      return v
    end
  end
  setmetatable(proxy, mt)
  protected[proxy] = true
  return proxy
end

local function fail(msg) error({err = 'ERR ' .. msg}) end

local LOG = {LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3}
local redis = {
  REPL_NONE = 0, REPL_AOF = 1, REPL_SLAVE = 2, REPL_REPLICA = 2, REPL_ALL = 3,
  REDIS_VERSION = rt.version, REDIS_VERSION_NUM = rt.version_num,
}
for k, v in pairs(LOG) do redis[k] = v end
for k, v in pairs(rt.redis_api) do redis[k] = v end
-- `call` and `pcall` are bound here for each run.
rt.redis = redis

-- Errors raised by Rust functions reach Lua code as the value Redis would raise.
local unwrap = rt.unwrap_error
local function unwrap_results(ok, ...)
  if ok then return ok, ... end
  return ok, unwrap((...))
end

-- `redis.register_function`, available while a library loads. Arguments are read
-- as Redis reads them: names accept numbers too (Lua's `isstring`), named arguments
-- in table order with the first bad one reported, flags in any case, kept once each
-- in Redis's own order.
local flag_order = {'no-writes', 'allow-oom', 'allow-stale', 'no-cluster', 'allow-cross-slot-keys'}
local function is_text(v) local t = type(v) return t == 'string' or t == 'number' end
local function read_flags(t)
  local set, j = {}, 1
  while true do
    local f = t[j]
    if f == nil then break end
    if not is_text(f) then fail('unknown flag given') end
    local known = false
    for _, name in ipairs(flag_order) do
      if lower(tostring(f)) == name then set[name] = true known = true end
    end
    if not known then fail('unknown flag given') end
    j = j + 1
  end
  local fl = {}
  for _, name in ipairs(flag_order) do if set[name] then fl[#fl + 1] = name end end
  return fl
end
local function register(...)
  local reg = rt.registered
  if reg == nil then fail('redis.register_function can only be called on FUNCTION LOAD command') end
  local n = select('#', ...)
  local name, cb, desc
  local fl = {}
  if n == 1 then
    local t = ...
    if type(t) ~= 'table' then
      fail('calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).')
    end
    for k, v in pairs(t) do
      if not is_text(k) then fail('named argument key given to redis.register_function is not a string') end
      local key = lower(tostring(k))
      if key == 'function_name' then
        if not is_text(v) then fail('function_name argument given to redis.register_function must be a string') end
        name = tostring(v)
      elseif key == 'description' then
        if not is_text(v) then fail('description argument given to redis.register_function must be a string') end
        desc = tostring(v)
      elseif key == 'callback' then
        if type(v) ~= 'function' then fail('callback argument given to redis.register_function must be a function') end
        cb = v
      elseif key == 'flags' then
        if type(v) ~= 'table' then fail('flags argument to redis.register_function must be a table representing function flags') end
        fl = read_flags(v)
      else
        fail('unknown argument given to redis.register_function')
      end
    end
    if name == nil then fail('redis.register_function must get a function name argument') end
    if cb == nil then fail('redis.register_function must get a callback argument') end
  elseif n == 2 then
    local first, second = ...
    if not is_text(first) then fail('first argument to redis.register_function must be a string') end
    if type(second) ~= 'function' then fail('second argument to redis.register_function must be a function') end
    name, cb = tostring(first), second
  else
    fail('wrong number of arguments to redis.register_function')
  end
  if not find(name, '^[%w_]+$') then
    fail('Library names can only contain letters, numbers, or underscores(_) and must be at least one character long')
  end
  if reg[name] then fail('Function already exists in the library') end
  reg[name] = {cb, fl, desc}
  reg[#reg + 1] = name
end

local lib = {}
for _, n in ipairs({'assert', 'error', 'ipairs', 'next', 'pairs', 'pcall', 'rawequal',
    'rawget', 'select', 'tonumber', 'tostring', 'type', 'unpack', 'xpcall', 'loadstring',
    'load', 'gcinfo', 'collectgarbage', '_VERSION', 'getmetatable'}) do
  lib[n] = G[n]
end
-- Every chunk is read as text, as Redis's Lua reads it: bytecode (string.dump's
-- output) could break out of the sandbox. A leading space makes the parser meet the
-- binary signature as text and fail as Redis's does; the chunk keeps its name.
local function text_chunk(s, chunkname)
  if type(s) == 'string' and byte(s, 1) == 27 then
    return loadstring(' ' .. s, chunkname or s)
  end
  return loadstring(s, chunkname)
end
lib.loadstring = text_chunk
lib.load = function(reader, chunkname)
  if type(reader) ~= 'function' then
    error("bad argument #1 to 'load' (function expected, got " .. type(reader) .. ")", 2)
  end
  local parts = {}
  while true do
    local piece = reader()
    if piece == nil or piece == '' then break end
    if type(piece) ~= 'string' then return nil, 'reader function must return a string' end
    parts[#parts + 1] = piece
  end
  return text_chunk(concat(parts), chunkname or '=(load)')
end
lib.rawset = function(t, k, v)
  if protected[t] then error('Attempt to modify a readonly table', 0) end
  return rawset(t, k, v)
end
lib.setmetatable = function(t, mt)
  if protected[t] then error('Attempt to modify a readonly table', 0) end
  return setmetatable(t, mt)
end
-- A script stopped by SCRIPT KILL (or a load deadline) stays stopped: pcall and xpcall
-- raise the stop again instead of returning it, as Redis's hook keeps raising it.
local killed = rt.killed
local function rethrow_stop(ok, ...)
  if not ok and killed() then error((...), 0) end
  return ok, ...
end
lib.pcall = function(f, ...) return unwrap_results(rethrow_stop(pcall(f, ...))) end
lib.xpcall = function(f, h)
  return rethrow_stop(xpcall(f, function(e)
    if killed() then return e end
    return h(unwrap(e))
  end))
end
lib.string = readonly(string)
lib.table = readonly(table)
lib.math = readonly(math)
lib.coroutine = readonly(coroutine)
lib.cjson = readonly(rt.cjson)
lib.bit = readonly(rt.bit)
lib.cmsgpack = readonly(rt.cmsgpack)
lib.struct = readonly(rt.struct)
lib.redis = readonly(redis)
lib._G = G

-- While a library loads, only this much is visible.
local loading_redis = {register_function = register, log = redis.log,
  REDIS_VERSION = rt.version, REDIS_VERSION_NUM = rt.version_num}
for k, v in pairs(LOG) do loading_redis[k] = v end
local loading = {redis = readonly(loading_redis, true)}

local keys = {}
for k in pairs(G) do keys[#keys + 1] = k end
for _, k in ipairs(keys) do rawset(G, k, nil) end
protected[G] = true
setmetatable(G, {
  __index = function(_, k)
    local v
    if rt.loading then v = loading[k] else v = lib[k] end
    if v == nil then
      error("Script attempted to access nonexistent global variable '" .. tostring(k) .. "'", 2)
    end
    return v
  end,
  __newindex = deny,
  __metatable = false,
})

-- Runs a compiled script or function under the error handler; returns ok, value.
rt.run = function(f, handler, keys, args)
  if keys == nil then return xpcall(f, handler) end
  return xpcall(function() return f(keys, args) end, handler)
end
