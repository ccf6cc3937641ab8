"""Sessions: the list page, the session page (its pages of messages, find and jumps, each message as HTML), the
agent page and the page of one captured call."""
