"""The Console's Channels consumers: one per open live page (console/routing.py), each on a `Hub` of this process
(base.py) that hears the runtime's notices once and has the page sent what changed, read from the database."""
