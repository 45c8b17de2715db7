// A client.
const key = "sk-li" +
  "ve-012345" + '6789abcdef';
