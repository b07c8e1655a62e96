-- wrk script: pipeline N requests per write, as in the TechEmpower plaintext test.
-- Usage: wrk -s bench/pipeline.lua URL -- N    (N defaults to 16)
local pipelined

function init(args)
  local n = tonumber(args[1]) or 16
  local parts = {}
  for i = 1, n do
    parts[i] = wrk.format()   -- GET wrk.path with wrk.headers, as wrk would send it
  end
  pipelined = table.concat(parts)
end

function request()
  return pipelined
end
