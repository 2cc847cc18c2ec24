package resp_test

import (
	"bufio"
	"fmt"
	"strings"

	"github.com/distlock/distlock/internal/resp"
)

// A command written with WriteCommand, and a server's replies read with
// ReadReply.
func Example() {
	var out strings.Builder
	w := bufio.NewWriter(&out)
	resp.WriteCommand(w, "SET", "k", "v", "NX")
	_ = w.Flush()
	fmt.Printf("%q\n", out.String())

	br := bufio.NewReader(strings.NewReader("+OK\r\n$-1\r\n:3\r\n-ERR no\r\n"))
	for range 4 {
		v, err := resp.ReadReply(br)
		fmt.Printf("%#v %v\n", v, err)
	}
	// Output:
	// "*4\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n$2\r\nNX\r\n"
	// "OK" <nil>
	// <nil> <nil>
	// 3 <nil>
	// "ERR no" <nil>
}
