package mcp_test

import (
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ratchetloop/ratchet/tool/mcp"
)

func TestText(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *sdk.CallToolResult
		want string
	}{
		{"nil", nil, ""},
		{"empty", &sdk.CallToolResult{}, ""},
		{"texts", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "a"}, &sdk.TextContent{Text: "b\n"}}}, "a\nb\n"},
		{"content wins over structured", &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "21 degrees"}}, StructuredContent: map[string]int{"t": 21}}, "21 degrees"},
		{"structured only", &sdk.CallToolResult{StructuredContent: []int{1, 2}}, "[1,2]"},
		{"image without type", &sdk.CallToolResult{Content: []sdk.Content{&sdk.ImageContent{}}}, "[image: unknown type, 0 bytes, not shown]"},
		{"resource without contents", &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{}}}, "[resource: empty]"},
		{"empty text resource", &sdk.CallToolResult{Content: []sdk.Content{&sdk.EmbeddedResource{Resource: &sdk.ResourceContents{URI: "x:/e"}}}}, "[resource x:/e]\n"},
		{"bare link", &sdk.CallToolResult{Content: []sdk.Content{&sdk.ResourceLink{URI: "x:/l"}}}, "[resource link: x:/l]"},
		//lint:ignore SA1019 servers may still send sampling content during the deprecation window
		{"sampling content", &sdk.CallToolResult{Content: []sdk.Content{&sdk.ToolUseContent{Name: "t"}}}, "[tooluse content, not shown]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mcp.Text(tc.res); got != tc.want {
				t.Errorf("Text = %q, want %q", got, tc.want)
			}
		})
	}
}
