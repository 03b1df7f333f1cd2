-- New visitors: no cookie, so every request is a visitor the server has never seen. (The same
-- per-request Lua call as returning.lua, so both cases cost wrk the same.)
function request()
   return wrk.format(nil, nil, nil, nil)
end
