-- wrk script: POSTs pre-signed, unique webhook deliveries.
--
-- The request file has one delivery per line: "<Stripe-Signature>\t<body>".
-- Thread i of n sends lines i, i+n, i+2n, ... once each and stops after its
-- share, so every request is a distinct event (no duplicate short-cuts).

local threads = {}
local counter = 0

function setup(thread)
   thread:set("index", counter)
   counter = counter + 1
   table.insert(threads, thread)
end

function init(args)
   local file, path = args[1], args[2]
   local nthreads = tonumber(args[3])
   requests = {}
   local n = 0
   for line in io.lines(file) do
      if n % nthreads == index then
         local sig, body = line:match("^([^\t]*)\t(.*)$")
         table.insert(requests, wrk.format("POST", path, {
            ["Stripe-Signature"] = sig,
            ["Content-Type"] = "application/json"
         }, body))
      end
      n = n + 1
   end
   sent = 0
   received = 0
end

function request()
   sent = sent + 1
   return requests[(sent - 1) % #requests + 1]
end

function response(status, headers, body)
   received = received + 1
   if status ~= 200 then
      errors = (errors or 0) + 1
   end
   if received >= #requests then
      wrk.thread:stop()
   end
end

function done(summary, latency, requests_)
   local bad = 0
   for _, t in ipairs(threads) do
      bad = bad + (t:get("errors") or 0)
   end
   io.write(string.format("non-200 responses: %d\n", bad))
end
