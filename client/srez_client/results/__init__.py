"""The results layout on the host, finding finished runs in it, and what is made from them."""
