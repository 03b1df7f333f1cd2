-- Returning visitors: every request carries the cookie of one of 1,000 known visitors.
local counter = 0
function request()
   counter = counter + 1
   wrk.headers["Cookie"] = "convert_visitor_id=returning-" .. (counter % 1000)
   return wrk.format(nil, nil, nil, nil)
end
