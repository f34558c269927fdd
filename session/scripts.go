package session

import (
	"context"
	_ "embed"
	"errors"

	"github.com/redis/go-redis/v9"

	"github.com/redschema/redschema/internal/script"
)

//go:embed common.lua
var commonLua string

var (
	//go:embed create.lua
	createLua string
	//go:embed get.lua
	getLua string
	//go:embed update.lua
	updateLua string
	//go:embed revoke.lua
	revokeLua string
	//go:embed revoke_all.lua
	revokeAllLua string
	//go:embed list.lua
	listLua string
	//go:embed refresh_hash.lua
	refreshHashLua string
	//go:embed rotate.lua
	rotateLua string
	//go:embed blacklist.lua
	blacklistLua string
	//go:embed user_login.lua
	userLoginLua string
	//go:embed user_validate.lua
	userValidateLua string
	//go:embed user_block.lua
	userBlockLua string
	//go:embed user_unblock.lua
	userUnblockLua string
	//go:embed user_logout.lua
	userLogoutLua string
	//go:embed authenticate.lua
	authenticateLua string
)

// withCommon prepends the shared helpers of common.lua to a script.
func withCommon(src string) *script.Script { return script.New(commonLua + "\n" + src) }

var (
	createScript       = withCommon(createLua)
	getScript          = withCommon(getLua)
	updateScript       = withCommon(updateLua)
	revokeScript       = withCommon(revokeLua)
	revokeAllScript    = withCommon(revokeAllLua)
	listScript         = withCommon(listLua)
	refreshHashScript  = withCommon(refreshHashLua)
	rotateScript       = withCommon(rotateLua)
	blacklistScript    = withCommon(blacklistLua)
	userLoginScript    = withCommon(userLoginLua)
	userValidateScript = withCommon(userValidateLua)
	userBlockScript    = script.New(userBlockLua)
	userUnblockScript  = script.New(userUnblockLua)
	userLogoutScript   = script.New(userLogoutLua)
	authenticateScript = withCommon(authenticateLua)
)

// run executes s in one round trip and returns its reply; a nil reply (Lua
// nil/false) is (nil, nil), never redis.Nil.
func run(ctx context.Context, c redis.Scripter, s *script.Script, keys []string, args ...any) (any, error) {
	v, err := s.Run(ctx, c, keys, args...).Result()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	return v, err
}

// status reports whether v is a one-element status reply {'name'} from a
// script, and which.
func status(v any) (string, bool) {
	a, ok := v.([]any)
	if !ok || len(a) != 1 {
		return "", false
	}
	s, ok := a[0].(string)
	return s, ok
}
