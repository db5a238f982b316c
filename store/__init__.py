"""store package (see DESIGN.md)."""
