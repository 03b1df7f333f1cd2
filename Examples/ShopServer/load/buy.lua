-- POST /buy, each request as a visitor of its own (distinct cookies across threads and runs),
-- counting the answers wrk received.
local threads = {}
function setup(thread)
   table.insert(threads, thread)
   thread:set("id", #threads)
end

function init(args)
   prefix = "buyer-" .. os.time() .. "-" .. id .. "-"
   counter = 0
   answers = {}
end

function request()
   counter = counter + 1
   return wrk.format("POST", "/buy", { ["Cookie"] = "convert_visitor_id=" .. prefix .. counter }, "")
end

function response(status, headers, body)
   local word = status == 200 and body:gsub("%s+$", "") or ("status " .. status)
   answers[word] = (answers[word] or 0) + 1
end

function done(summary, latency, requests)
   local total = {}
   for _, thread in ipairs(threads) do
      local counts = thread:get("answers")
      for word, count in pairs(counts) do total[word] = (total[word] or 0) + count end
   end
   for word, count in pairs(total) do io.write(string.format("wrk received %s: %d\n", word, count)) end
end
