"""bot package (see DESIGN.md)."""
