"""QA review: annotations on sessions and messages, review status and assignee, the review queue."""
