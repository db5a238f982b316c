"""webapp package (see DESIGN.md)."""
