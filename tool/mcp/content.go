package mcp

import (
	"encoding/json"
	"fmt"
	"strings"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Text renders a tool result as the text the model sees, one part after
// another on lines of their own:
//
//   - text as is;
//   - an image or audio clip as a placeholder such as
//     "[image: image/png, 1234 bytes, not shown]";
//   - an embedded resource as "[resource URI]" followed by its text, or as
//     a placeholder when it is binary;
//   - a resource link as "[resource link: NAME URI (MIME): DESCRIPTION]".
//
// A result with no content but structured content is that content as JSON.
// IsError is not reflected; the caller decides what an error means.
func Text(res *sdk.CallToolResult) string {
	if res == nil {
		return ""
	}
	parts := make([]string, 0, len(res.Content))
	for _, c := range res.Content {
		parts = append(parts, contentText(c))
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n")
}

func contentText(c sdk.Content) string {
	switch c := c.(type) {
	case *sdk.TextContent:
		return c.Text
	case *sdk.ImageContent:
		return placeholder("image", c.MIMEType, len(c.Data))
	case *sdk.AudioContent:
		return placeholder("audio", c.MIMEType, len(c.Data))
	case *sdk.EmbeddedResource:
		r := c.Resource
		switch {
		case r == nil:
			return "[resource: empty]"
		case r.Text != "" || len(r.Blob) == 0:
			return "[resource " + r.URI + "]\n" + r.Text
		}
		return fmt.Sprintf("[resource %s: %s, not shown]", r.URI, size(r.MIMEType, len(r.Blob)))
	case *sdk.ResourceLink:
		var b strings.Builder
		b.WriteString("[resource link: ")
		if c.Name != "" {
			b.WriteString(c.Name + " ")
		}
		b.WriteString(c.URI)
		if c.MIMEType != "" {
			b.WriteString(" (" + c.MIMEType + ")")
		}
		if c.Description != "" {
			b.WriteString(": " + c.Description)
		}
		b.WriteString("]")
		return b.String()
	case nil:
		return ""
	}
	// Content types meant for other messages (sampling's tool use, say).
	kind := fmt.Sprintf("%T", c)
	kind = strings.TrimSuffix(strings.TrimPrefix(kind, "*mcp."), "Content")
	return "[" + strings.ToLower(kind) + " content, not shown]"
}

func placeholder(kind, mime string, n int) string {
	return fmt.Sprintf("[%s: %s, not shown]", kind, size(mime, n))
}

func size(mime string, n int) string {
	if mime == "" {
		mime = "unknown type"
	}
	unit := "bytes"
	if n == 1 {
		unit = "byte"
	}
	return fmt.Sprintf("%s, %d %s", mime, n, unit)
}
