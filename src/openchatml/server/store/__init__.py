"""Where responses and conversations are kept: the :class:`~.base.Store` protocol, SQLite (``sqlite``, the
default) and PostgreSQL (``postgres``, for several servers sharing one store), both on the
SQL of :mod:`.sql`. The implementations are imported from their modules, so that
importing this package loads no database driver."""
