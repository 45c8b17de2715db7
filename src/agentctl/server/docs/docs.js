// The interactive API reference at /docs: Swagger UI, from files this server serves itself,
// on the OpenAPI document beside the page (relative, so it works behind any path prefix).
window.ui = SwaggerUIBundle({
  url: new URL("openapi.json", document.baseURI).href,
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  showExtensions: true,
  showCommonExtensions: true,
  // No badge fetched from the public validator: the page calls this server only.
  validatorUrl: null,
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
});
