"""``python -m think_kernel -f CONNECTION_FILE`` starts the think kernel."""

from think_kernel.kernel.app import main

if __name__ == "__main__":
    main()
