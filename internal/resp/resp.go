// Package resp reads and writes the RESP2 values distlock's raw Redis
// connections need: commands out as arrays of bulk strings; simple
// strings, errors, integers, bulk strings (and the nil bulk string) and
// arrays in. It is the wire format of redlock's multiplexed connections,
// of the testbed's one-command probes and of the benchmarks' raw-socket
// clients. It does no I/O of its own beyond the bufio buffers it is given.
package resp

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
)

// Error is an error reply ("-ERR ...", "-NOSCRIPT ..."), without the
// leading '-'. ReadReply returns it as a value, not as its error: the
// connection is still in step.
type Error string

func (e Error) Error() string { return string(e) }

// WriteCommand buffers one command, an array of bulk strings, in w;
// w.Flush sends it and reports a write error.
func WriteCommand(w *bufio.Writer, args ...string) {
	var num [20]byte
	w.WriteByte('*')
	w.Write(strconv.AppendInt(num[:0], int64(len(args)), 10))
	w.WriteString("\r\n")
	for _, a := range args {
		w.WriteByte('$')
		w.Write(strconv.AppendInt(num[:0], int64(len(a)), 10))
		w.WriteString("\r\n")
		w.WriteString(a)
		w.WriteString("\r\n")
	}
}

// AppendCommand appends the encoding of one command to b.
func AppendCommand(b []byte, args ...string) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, "\r\n"...)
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, "\r\n"...)
		b = append(b, a...)
		b = append(b, "\r\n"...)
	}
	return b
}

// ReadReply reads one reply from br: a string (simple or bulk string),
// an int64 (integer), nil (nil bulk string or nil array), an Error, or a
// []any of these (array; a command sent to a server reads as an array of
// strings). A read error of br is returned as is (a deadline that passed
// matches os.ErrDeadlineExceeded); a reply that is not RESP2 returns an
// error, after which br is out of step.
func ReadReply(br *bufio.Reader) (any, error) {
	line, err := readLine(br)
	if err != nil {
		return nil, err
	}
	switch line[0] {
	case '+':
		return string(line[1:]), nil
	case '-':
		return Error(line[1:]), nil
	case ':':
		return strconv.ParseInt(string(line[1:]), 10, 64)
	case '$':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil || n < 0 {
			return nil, err
		}
		b := make([]byte, n+2)
		if _, err := io.ReadFull(br, b); err != nil {
			return nil, err
		}
		return string(b[:n]), nil
	case '*':
		n, err := strconv.Atoi(string(line[1:]))
		if err != nil || n < 0 {
			return nil, err
		}
		out := make([]any, n)
		for i := range out {
			if out[i], err = ReadReply(br); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("resp: unexpected reply type %q", line[0])
}

// readLine reads one line and strips its CRLF; a line without CRLF, or
// with nothing before it, is malformed.
func readLine(br *bufio.Reader) ([]byte, error) {
	line, err := br.ReadSlice('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, fmt.Errorf("resp: malformed reply line %q", line)
	}
	return line[:len(line)-2], nil
}
