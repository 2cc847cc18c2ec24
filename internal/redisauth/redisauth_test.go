package redisauth

import "testing"

func TestRefused(t *testing.T) {
	for _, c := range []struct {
		reply   string
		refused bool
	}{
		{"WRONGPASS invalid username-password pair or user is disabled.", true},
		{"NOAUTH Authentication required.", true},
		{"ERR invalid password", true},
		{"ERR invalid username-password pair", true},
		{"ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?", true},
		{"ERR Client sent AUTH, but no password is set", true},
		{"ERR max number of clients reached", false},
		{"LOADING Redis is loading the dataset in memory", false},
		{"BUSY Redis is busy running a script.", false},
		{"MASTERDOWN Link with MASTER is down", false},
		{"ERR unknown command 'HELLO'", false},
		{"NOPERM this user has no permissions to run the 'eval' command", false},
		{"", false},
	} {
		if got := Refused(c.reply); got != c.refused {
			t.Errorf("Refused(%q) = %v, want %v", c.reply, got, c.refused)
		}
	}
}
