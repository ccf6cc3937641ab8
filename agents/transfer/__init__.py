"""Import and export: files in any format into sessions (a preview first, the upload kept in between), sessions out
to any format (whole, filtered or trimmed), and their pages."""
