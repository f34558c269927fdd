package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/redschema/redschema/keys"
	"github.com/redschema/redschema/session"
)

// ha is the home-automation backend's namespace (seed 000), byte for byte.
var ha = keys.Namespace{Prefix: "ha:", NoHashTags: true}

// nodeRedis are the clients seed 000's code is written for.
var nodeRedis = []string{"redis4", "redis6"}

// sessionFlows: seed 000 §4, the user record, with session.WithActiveField.
func sessionFlows() []flow {
	return []flow{
		{seed: "000", name: "session user login node->go", area: "session", clients: nodeRedis, run: userLoginNodeGo},
		{seed: "000", name: "session user login go->node", area: "session", clients: nodeRedis, run: userLoginGoNode},
		{seed: "000", name: "session user disable node->go", area: "session", clients: nodeRedis, run: userDisableNodeGo},
	}
}

func users(e *env) (*session.Users, error) {
	return session.NewUsers(e.rdb, session.WithNamespace(ha), session.WithActiveField())
}

// nodeValidate runs the backend's validator and checks its answer.
func nodeValidate(ctx context.Context, e *env, id, want string) error {
	var got string
	if err := e.node(ctx, "validate", map[string]string{"id": id}, &got); err != nil {
		return err
	}
	if got != want {
		return diverge("the backend's validator answers %q, want %q", got, want)
	}
	return nil
}

// userLoginNodeGo: the backend logs a user in (active 'true', no status);
// the library validates it as a login, and the backend still does after.
func userLoginNodeGo(ctx context.Context, e *env) error {
	u, err := users(e)
	if err != nil {
		return err
	}
	if err := e.node(ctx, "login", map[string]string{"id": "123"}, nil); err != nil {
		return err
	}
	usr, err := u.Validate(ctx, "123")
	if err != nil {
		return diverge("Validate of the backend's user: %v", err)
	}
	if usr.Status != session.StatusLogin || usr.DeviceID != "iPhone_12_ABC123" || usr.IPAddress != "192.168.1.100" {
		return diverge("Validate read %+v", *usr)
	}
	return nodeValidate(ctx, e, "123", "ok")
}

// userLoginGoNode: the library logs a user in, blocks and unblocks it;
// the backend's validator agrees at each step.
func userLoginGoNode(ctx context.Context, e *env) error {
	u, err := users(e)
	if err != nil {
		return err
	}
	if _, err := u.Login(ctx, "123", session.LoginInfo{DeviceID: "iPhone_12_ABC123", IPAddress: "192.168.1.100"}); err != nil {
		return err
	}
	if err := nodeValidate(ctx, e, "123", "ok"); err != nil {
		return fmt.Errorf("after Login: %w", err)
	}
	if err := u.Block(ctx, "123"); err != nil {
		return err
	}
	if err := nodeValidate(ctx, e, "123", "User disabled"); err != nil {
		return fmt.Errorf("after Block: %w", err)
	}
	if err := u.Unblock(ctx, "123"); err != nil {
		return err
	}
	if err := nodeValidate(ctx, e, "123", "ok"); err != nil {
		return fmt.Errorf("after Unblock: %w", err)
	}
	return nil
}

// userDisableNodeGo: the backend disables a user the library logged in
// (active 'false'): the library refuses it; the backend logs it out: the
// library finds no record.
func userDisableNodeGo(ctx context.Context, e *env) error {
	u, err := users(e)
	if err != nil {
		return err
	}
	if _, err := u.Login(ctx, "123", session.LoginInfo{DeviceID: "iPhone_12_ABC123"}); err != nil {
		return err
	}
	if err := e.node(ctx, "disable", map[string]string{"id": "123"}, nil); err != nil {
		return err
	}
	if _, err := u.Validate(ctx, "123"); !errors.Is(err, session.ErrBlocked) {
		return diverge("Validate of a user the backend disabled: %v, want ErrBlocked", err)
	}
	if err := e.node(ctx, "logout", map[string]string{"id": "123"}, nil); err != nil {
		return err
	}
	if _, err := u.Validate(ctx, "123"); !errors.Is(err, session.ErrNotFound) {
		return diverge("Validate of a user the backend logged out: %v, want ErrNotFound", err)
	}
	return nil
}
