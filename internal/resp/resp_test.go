package resp_test

import (
	"bufio"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/distlock/distlock/internal/resp"
)

func reader(s string) *bufio.Reader { return bufio.NewReader(strings.NewReader(s)) }

// TestRESPRead checks the value each RESP2 reply type reads as.
func TestRESPRead(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     any
	}{
		{"simple", "+OK\r\n", "OK"},
		{"empty simple", "+\r\n", ""},
		{"error", "-NOSCRIPT no script\r\n", resp.Error("NOSCRIPT no script")},
		{"int", ":42\r\n", int64(42)},
		{"negative int", ":-7\r\n", int64(-7)},
		{"bulk", "$5\r\nhe\r\no\r\n", "he\r\no"},
		{"empty bulk", "$0\r\n\r\n", ""},
		{"nil bulk", "$-1\r\n", nil},
		{"nil array", "*-1\r\n", nil},
		{"empty array", "*0\r\n", []any{}},
		{"array", "*4\r\n$7\r\nmessage\r\n:1\r\n$-1\r\n*1\r\n-ERR x\r\n", []any{"message", int64(1), nil, []any{resp.Error("ERR x")}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			br := reader(c.in)
			got, err := resp.ReadReply(br)
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("ReadReply(%q) = %#v, %v; want %#v", c.in, got, err, c.want)
			}
			if _, err := br.ReadByte(); err != io.EOF {
				t.Fatalf("ReadReply(%q) left input unread", c.in)
			}
		})
	}
}

// TestRESPErrorIsAValue checks that an error reply reads as a value
// matching resp.Error, so a caller can tell it from a broken connection.
func TestRESPErrorIsAValue(t *testing.T) {
	v, err := resp.ReadReply(reader("-ERR wrong\r\n"))
	var e resp.Error
	if err != nil || !errors.As(v.(error), &e) || e.Error() != "ERR wrong" {
		t.Fatalf("got %#v, %v", v, err)
	}
}

// TestRESPMalformed checks that input that is not RESP2, or is cut
// off, is an error.
func TestRESPMalformed(t *testing.T) {
	for _, c := range []struct{ name, in string }{
		{"no CR", "+OK\n"},
		{"empty line", "\r\n"},
		{"unknown type", "!3\r\n"},
		{"bad int", ":x\r\n"},
		{"bad bulk length", "$x\r\n"},
		{"bulk cut off", "$5\r\nab"},
		{"array cut off", "*2\r\n:1\r\n"},
		{"no line end", "+OK"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if v, err := resp.ReadReply(reader(c.in)); err == nil {
				t.Fatalf("ReadReply(%q) = %#v, nil; want an error", c.in, v)
			}
		})
	}
}

// TestRESPWrite checks that a command is written as an array of bulk
// strings, by WriteCommand and AppendCommand alike, and reads back as the
// array of its arguments.
func TestRESPWrite(t *testing.T) {
	args := []string{"EVALSHA", "abc", "1", "k\r\ney", ""}
	want := "*5\r\n$7\r\nEVALSHA\r\n$3\r\nabc\r\n$1\r\n1\r\n$5\r\nk\r\ney\r\n$0\r\n\r\n"
	var b strings.Builder
	w := bufio.NewWriter(&b)
	resp.WriteCommand(w, args...)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if b.String() != want {
		t.Fatalf("WriteCommand wrote %q, want %q", b.String(), want)
	}
	if got := string(resp.AppendCommand([]byte("x"), args...)); got != "x"+want {
		t.Fatalf("AppendCommand = %q, want %q", got, "x"+want)
	}
	v, err := resp.ReadReply(reader(want))
	if err != nil || !reflect.DeepEqual(v, []any{"EVALSHA", "abc", "1", "k\r\ney", ""}) {
		t.Fatalf("read back %#v, %v", v, err)
	}
}
